"""Action (runs on the controller, contacts no host): before a push touches any host, every host
of the play has its rendered tree, and its variables meet the argument specs of the roles the
push runs. One run for all hosts, every problem at once (a task per host, or a loop of
`validate_argument_spec`, is a turn of the strategy or a templating of the spec files per host).
Its documentation: `playbooks/library/sparkfab_preflight.py`.
"""

from __future__ import annotations

import os
from typing import Any

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # ansible-core: no connection is made for this action

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        hosts = list(args.get("hosts") or [])
        hostvars = task_vars["hostvars"]
        options: dict[str, Any] = {}
        for path in args.get("specs") or []:
            with open(path, encoding="utf-8") as f:
                options.update(yaml.safe_load(f)["argument_specs"]["main"]["options"])
        validator = ArgumentSpecValidator(options)
        tree = args.get("tree")
        missing, problems = [], []
        for h in hosts:
            own = hostvars[h]  # each lookup gathers the host's variables: once per host
            if tree and ("sparkfab_files" not in own or not os.path.isdir(os.path.join(tree, h))):
                missing.append(h)
            errors = validator.validate({k: own[k] for k in options if k in own}).error_messages
            if errors:
                problems.append(f"{h}: {'; '.join(errors)}")
        if missing:
            problems.insert(
                0, f"{', '.join(missing)}: no rendered tree; run `sparkfab render` and use its inventory.yml"
            )
        result["changed"] = False
        if problems:
            result["failed"] = True
            result["msg"] = "\n".join(problems)
        else:
            result["msg"] = f"{len(hosts)} host(s) checked"
        return result
