"""Secrets and ansible-runner: runner writes the whole environment of a run into
artifacts/<ident>/command, so sparkfab gives the run only what Ansible needs and hands the
secrets over in a memory-only file; a real run on localhost proves both."""

from __future__ import annotations

from sparkfab.push.env import run_env
from sparkfab.push.run import run_playbook
from tests.conftest import REPO
from tests.helpers.inventories import localhost

TOKEN = "hf_PLANTED_0123456789abcdef"


def test_a_run_gets_its_secrets_from_memory_and_writes_them_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("SOME_OTHER_SETTING", "kept-out")
    inventory = localhost(tmp_path)
    out = tmp_path / "seen.txt"
    result = run_playbook(
        str(REPO / "tests/data/playbooks/secrets-probe.yml"),
        inventory,
        "probe",
        extravars={"probe_out": str(out)},
        hosts=["local"],
        workdir=tmp_path / "state",
        secrets=["HF_TOKEN"],
    )
    assert result.rc == 0 and not result.failures, result
    assert out.read_text().splitlines() == [f"source={TOKEN}", "env="]
    leaked = [p for p in (tmp_path / "state").rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert leaked == []
    command = next((tmp_path / "state").rglob("command")).read_text()
    assert "SOME_OTHER_SETTING" not in command and "ANSIBLE_CONFIG" in command


def test_the_run_environment_is_an_allow_list():
    env = run_env({"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "ANSIBLE_VAULT_PASSWORD_FILE": "/v", "HF_TOKEN": "x"})
    assert env == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "ANSIBLE_VAULT_PASSWORD_FILE": "/v"}
    assert run_env({"ANSIBLE_BECOME_PASSWORD": "x", "WANDB_API_KEY": "y", "AWS_SECRET_ACCESS_KEY": "z"}) == {}
