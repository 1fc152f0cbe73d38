"""Action: the check every host of a push runs before any host changes anything, in one turn of
the strategy: the netplan role's check (`sparkfab_netplan`, stage check) and, unless it refuses,
the files role's preview (`sparkfab_install` with preview: what its run would change, nothing
changed). Its `pending` lets a host that has nothing to change end its play there: a push that
changes nothing then costs this one turn per host, not one per module. Its documentation:
`playbooks/library/sparkfab_fabric_check.py`.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

#: what a module adds to its result that is not the check's to report
_OWN = ("invocation", "_ansible_no_log", "warnings", "deprecations")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("bundle_text", "netplan", "files"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _spec, args = self.validate_argument_spec(
            argument_spec={
                "bundle_text": {"type": "str", "required": True, "no_log": True},
                "netplan": {"type": "dict", "required": True},
                "files": {"type": "dict", "required": True},
            }
        )
        text = args["bundle_text"]
        netplan_args = {**args["netplan"], "stage": "check", "bundle_text": text}
        files_args = {**args["files"], "preview": True, "bundle_text": text}
        said: dict[str, list[Any]] = {"warnings": [], "deprecations": []}
        try:
            netplan = self._module("sparkfab.fabric.sparkfab_netplan", netplan_args, task_vars, said)
            files = (
                {}
                if netplan.get("failed")
                else self._module("sparkfab.fabric.sparkfab_install", files_args, task_vars, said)
            )
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        files.pop("diff", None)  # the install shows it when it runs
        if netplan.get("failed") or files.get("failed"):
            # a refusal (or an error) is the host's `msg`: every host stops before any changes
            result.update(files if files.get("failed") else netplan, pending=True)
        else:
            result.update(netplan, files=files, pending=bool(netplan.get("pending") or files.get("changed")))
        result.update({kind: items for kind, items in said.items() if items})
        return result

    def _module(
        self, name: str, module_args: dict[str, Any], task_vars: Any, said: dict[str, list[Any]]
    ) -> dict[str, Any]:
        """`name`'s result less what is not the check's to report; its warnings and deprecations
        go into `said`, which the action's result carries for Ansible to show."""
        res = self._execute_module(module_name=name, module_args=module_args, task_vars=task_vars)
        for kind, items in said.items():
            items += res.get(kind) or []
        return {k: v for k, v in res.items() if k not in _OWN}
