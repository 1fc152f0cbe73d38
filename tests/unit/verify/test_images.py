"""verify's image checks (`verify.images`): NCCL's version as the image reports it, one image on
every rank, and an image without torch."""

from __future__ import annotations

import pytest

from sparkfab.resolve import load_plan
from sparkfab.verify.result import FAIL, PASS
from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"


class _Res:
    def __init__(self, rc: int, stdout: str = "", stderr: str = "") -> None:
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


class _Host:
    """A host that answers `docker ...` commands from a table (what verify sends is recorded)."""

    def __init__(self, answers: dict[str, _Res]) -> None:
        self.answers, self.sent = answers, []

    def run(self, cmd: str) -> _Res:
        self.sent.append(cmd)
        return next((r for k, r in self.answers.items() if k in cmd), _Res(1, "", "unknown"))


@pytest.mark.parametrize(
    "text,version",
    [
        ("(2, 30, 7)\n", (2, 30, 7)),  # torch.cuda.nccl.version() in current torch
        ("23007\n", (2, 30, 7)),  # NCCL_VERSION_CODE, older torch
        ("21805\n", (2, 18, 5)),
        ("2708\n", (2, 7, 8)),  # the pre-2.9 encoding: major*1000 + minor*100 + patch
        ("vm:708:708 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n", (2, 28, 9)),
        ("2.31.2\n", (2, 31, 2)),
        ("Traceback ...\nModuleNotFoundError: No module named 'torch'\n", None),
        ("", None),
    ],
)
def test_nccl_version_strings(text, version):
    from sparkfab.verify.images import parse_nccl_version

    assert parse_nccl_version(text) == version


def test_nccl_version_of_a_captured_debug_log():
    from sparkfab.verify.images import parse_nccl_version

    path = CAPTURED / "torch_nccl_socket_debug_2xH200.log"
    assert parse_nccl_version(path.read_text()) == (2, 28, 9)


def test_image_ids_must_match_on_every_rank():
    from sparkfab.verify.images import same_image

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    inst = plan.instances[0]
    ids = ["sha256:aaa", "sha256:aaa", "sha256:bbb", None]
    hosts = {
        h: _Host({"image inspect": _Res(0, f"{i}\n") if i else _Res(1, "", "No such image")})
        for h, i in zip(inst.hosts, ids, strict=True)
    }
    res = same_image(inst, "vllm/vllm-openai:v0.32.0", hosts)
    assert [r.status for r in res] == [PASS, PASS, FAIL, FAIL]
    assert res[3].actual == "absent" and "docker pull vllm/vllm-openai:v0.32.0" in res[3].detail
    assert "docker image inspect --format '{{.Id}}' vllm/vllm-openai:v0.32.0" in hosts[inst.hosts[0]].sent[0]


@pytest.mark.parametrize(
    "out,direct,status",
    [
        ("(2, 31, 2)\n", True, PASS),
        ("(2, 30, 7)\n", True, PASS),
        ("(2, 28, 9)\n", True, FAIL),  # a ring on an NCCL without subnet-aware routing
        ("(2, 28, 9)\n", False, PASS),  # a switch needs no subnet routing
    ],
)
def test_nccl_in_the_image_decides_not_the_inventory(out, direct, status):
    from sparkfab.verify.images import nccl_in_image

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = _Host({"docker run --rm --entrypoint python3": _Res(0, out)})
    r = nccl_in_image(plan.instances[0], "img:1", host, direct)
    assert r.status == status, r
    assert "torch.cuda.nccl.version()" in host.sent[0]


def test_an_image_without_torch_is_a_failure_with_the_reason():
    from sparkfab.verify.images import nccl_in_image

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = _Host({"docker run": _Res(1, "", "ModuleNotFoundError: No module named 'torch'")})
    r = nccl_in_image(plan.instances[0], "img:1", host, True)
    assert r.status == FAIL and r.actual == "unknown" and "No module named 'torch'" in r.detail
