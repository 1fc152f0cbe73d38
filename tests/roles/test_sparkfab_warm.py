"""The serve role's warm-up module, run directly the way Ansible runs it, against the OpenAI
double: one completion to the model the server lists, its key read by name from the secrets
file where the server requires one, and a failure that says what the server answered."""

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

MODULE = REPO / "roles/sparkfab_serve/library/sparkfab_warm.py"


@pytest.fixture(autouse=True)
def _module_utils(collections, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(collections))


def _run(tmp_path, **args):
    (tmp_path / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    res = subprocess.run([sys.executable, str(MODULE), str(tmp_path / "args.json")], capture_output=True, text=True)
    return json.loads(res.stdout)


def test_one_completion_to_the_listed_model_and_how_long_it_took(tmp_path, double):
    url = double("--prefill-s-per-token", "1e-6", "--token-interval-s", "0.001")
    out = _run(tmp_path, url=url, timeout=30)
    assert not out.get("failed") and out["changed"] is False, out
    said = re.fullmatch(rf"warmed: {re.escape(out['model'])} answered its first completion in (\d+\.\d) s", out["msg"])
    # the message rounds the time to tenths and `seconds` to thousandths: 0.0496 s says 0.0, 0.05
    assert said and abs(float(said[1]) - out["seconds"]) <= 0.05 + 1e-9, out
    # check mode sends nothing and says what a run would do
    assert _run(tmp_path, url=url, _ansible_check_mode=True)["msg"] == f"would warm {url} with one completion"


def test_a_server_that_wants_a_key_gets_it_from_the_secrets_file(tmp_path, double):
    url = double("--api-key", "k-123", "--prefill-s-per-token", "1e-6", "--token-interval-s", "0.001")
    refused = _run(tmp_path, url=url, timeout=30, key_env="VLLM_API_KEY", secrets_file=str(tmp_path / "none.env"))
    assert refused["failed"] and "HTTP 401" in refused["msg"] and "/v1/models" in refused["msg"], refused
    secrets = tmp_path / "secrets.env"
    secrets.write_text("HF_TOKEN=hf-x\nVLLM_API_KEY=k-123\n")
    out = _run(tmp_path, url=url, timeout=30, key_env="VLLM_API_KEY", secrets_file=str(secrets))
    assert not out.get("failed"), out
    assert "k-123" not in json.dumps(out)  # the key stays out of what Ansible records


def test_a_server_that_does_not_answer_fails_the_warm_up_with_why(tmp_path):
    out = _run(tmp_path, url="http://127.0.0.1:9", timeout=5)
    assert out["failed"] and out["msg"].startswith("the engine did not answer its first completion: "), out
