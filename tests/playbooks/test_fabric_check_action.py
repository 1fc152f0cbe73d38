"""The push's check (action `sparkfab_fabric_check`) under ansible-playbook itself, with stand-ins
for the two modules it runs: what it hands on (pending, the preview under `files`, a refusal as
the host's failure) and that Ansible still shows the modules' warnings and deprecations."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.conftest import REPO

NETPLAN = """
from ansible.module_utils.basic import AnsibleModule
m = AnsibleModule({"stage": {}, "bundle_text": {"no_log": True}, "refuse": {"type": "bool"},
                   "pending": {"type": "bool"}}, supports_check_mode=True)
m.warn("netplan stand-in warns")
m.deprecate("netplan stand-in deprecates", version="9.9")
if m.params["refuse"]:
    m.fail_json(msg="foreign netplan file: /etc/netplan/50-x.yaml")
m.exit_json(changed=False, stage=m.params["stage"], pending=m.params["pending"])
"""

INSTALL = """
from ansible.module_utils.basic import AnsibleModule
m = AnsibleModule({"preview": {"type": "bool"}, "bundle_text": {"no_log": True}, "change": {"type": "bool"},
                   "marker": {}}, supports_check_mode=True)
open(m.params["marker"], "w").write("ran")
m.warn("install stand-in warns")
m.deprecate("install stand-in deprecates", version="9.9")
m.exit_json(changed=m.params["change"], preview=m.params["preview"], diff={"before": "a", "after": "b"})
"""


def _play(tmp_path, cases: dict[str, dict]) -> tuple[dict, str]:
    # the collection as the check meets it, with the stand-ins for its two modules
    home = tmp_path / "collections/ansible_collections/sparkfab/fabric/plugins"
    (home / "modules").mkdir(parents=True)
    (home / "action").mkdir()
    (home / "modules/sparkfab_netplan.py").write_text(NETPLAN)
    (home / "modules/sparkfab_install.py").write_text(INSTALL)
    shutil.copy(REPO / "playbooks/action_plugins/sparkfab_fabric_check.py", home / "action")
    tasks = []
    for name, case in cases.items():
        files = {"change": case["change"], "marker": str(tmp_path / f"{name}.ran")}
        netplan = {"refuse": case["refuse"], "pending": case["pending"]}
        tasks.append(
            {
                "name": f"Check {name}",
                "sparkfab.fabric.sparkfab_fabric_check": {"bundle_text": "{}", "netplan": netplan, "files": files},
                "register": f"r_{name}",
                "ignore_errors": True,
            }
        )
    out = tmp_path / "results.json"
    results = "{" + ", ".join(f'"{n}": r_{n}' for n in cases) + "}"
    tasks.append({"copy": {"dest": str(out), "content": "{{ " + results + " | to_json }}"}})
    play = [{"hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": tasks}]
    (tmp_path / "play.yml").write_text(json.dumps(play))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")  # not the repository's: Ansible's defaults
    env = {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"),
        "ANSIBLE_DEPRECATION_WARNINGS": "true",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"),
    }
    res = subprocess.run(
        [
            *(str(REPO / ".venv/bin/ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml")),
            *("-e", f"ansible_python_interpreter={sys.executable}"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(out.read_text()), res.stdout + res.stderr


def test_the_check_hands_on_what_each_host_has_to_do_and_what_the_modules_said(tmp_path):
    cases = {
        "converged": {"refuse": False, "pending": False, "change": False},
        "drifted": {"refuse": False, "pending": True, "change": False},
        "files": {"refuse": False, "pending": False, "change": True},
        "refused": {"refuse": True, "pending": False, "change": True},
    }
    got, said = _play(tmp_path, cases)
    assert got["converged"]["pending"] is False and got["converged"]["stage"] == "check"
    assert got["converged"]["files"]["preview"] is True and "diff" not in got["converged"]["files"]
    assert got["drifted"]["pending"] is True
    assert got["files"]["pending"] is True and got["files"]["files"]["changed"] is True
    # a refusal is the host's failure, and the install is not run after it
    assert got["refused"]["failed"] is True and got["refused"]["msg"].startswith("foreign netplan file:")
    assert got["refused"]["pending"] is True and not (tmp_path / "refused.ran").exists()
    assert (tmp_path / "converged.ran").exists()
    # both modules' warnings and deprecations reach Ansible's output (which says each once)
    flat = " ".join(said.split())
    for text in ("netplan stand-in warns", "install stand-in warns"):
        assert f"[WARNING]: {text}" in flat, said
    for text in ("netplan stand-in deprecates", "install stand-in deprecates"):
        assert f"[DEPRECATION WARNING]: {text}" in flat, said
