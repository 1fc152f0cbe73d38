"""How a hostile case runs: its verb in-process, and the asserts every case shares: the exit
code the README promises (2 bad input or usage, 5 a missing file or a misbehaving server, never
1), a message on stderr that names the culprit, no line longer than the CLI's limit, a time
bound, and that nothing in the case's directory changed except the outputs the case allows
(checksums of the whole tree)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.commands.hostile.table import EXE, FIFO, Case


def _tree(root: Path, skip: tuple[str, ...]) -> dict[str, str]:
    """Checksums of everything under root but the outputs a case may write (under case/)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if any(rel == f"case/{s}" or rel.startswith(f"case/{s}/") for s in skip):
            continue
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


class _Hang(Exception):
    pass


def params(cases: list[Case]) -> list[Any]:
    """The cases as pytest parameters: those that wait out a bound of their own in the slow tier."""
    return [pytest.param(k, marks=pytest.mark.slow) if k.slow else k for k in cases]


def run(
    case: Case,
    tmp_path: Path,
    capsys: Any,
    monkeypatch: Any,
    server: Callable[[str], str],
    setup: Callable[[Path], None] | None = None,
) -> tuple[Path, str]:
    """Run one case and assert what every case shares; the case's directory and stderr, for a
    check of the case's own. `setup` finishes the case's files (a vault encrypted in place)."""
    from sparkfab.cli import main

    d = tmp_path / "case"
    d.mkdir()
    for rel, given in case.files.items():
        content = given() if callable(given) else given  # a large input is made when its case runs
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if content == FIFO:
            os.mkfifo(p)
        elif content == EXE:
            p.write_bytes(EXE.replace(b"{d}", str(d).encode()))
            p.chmod(0o755)
        else:
            p.write_bytes(content if isinstance(content, bytes) else content.encode())
    if setup is not None:
        setup(d)
    url = server(case.server) if case.server else ""
    argv = [a.replace("{d}", str(d)).replace("{url}", url) for a in case.argv]
    monkeypatch.chdir(d)
    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path / "labs"))
    # the CLI hands --vault-password-file to Ansible in its environment: undone after the case
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", "")  # recorded as absent, so removed again
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE")
    for name, value in case.env.items():
        monkeypatch.setenv(name, value.replace("{d}", str(d)))
    before = _tree(tmp_path, case.outputs)

    def hang(*_: Any) -> None:
        raise _Hang(f"{case.id} ran past {case.seconds * 3:.0f} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, case.seconds * 3)
    t0 = time.monotonic()
    try:
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    elapsed = time.monotonic() - t0
    _out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err, err
    assert code == case.code, f"exit {code}, expected {case.code}: {err[-2000:]}"
    assert re.search(case.culprit, err), f"{case.culprit!r} not in: {err[-2000:]}"
    assert max((len(line) for line in err.splitlines()), default=0) <= 300, err[:600]
    if code != 0:
        assert len(err.splitlines()) <= 100, err[:2000]
    assert elapsed < case.seconds, f"{case.id} took {elapsed:.1f} s"
    after = _tree(tmp_path, case.outputs)
    assert after == before, f"changed outside {case.outputs}: {set(after.items()) ^ set(before.items())}"
    return d, err
