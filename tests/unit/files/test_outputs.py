"""Outputs are swapped in whole or not at all, and nothing is left beside them: not when the
swap fails, not when the verb is ended by SIGTERM (what timeout, systemd and CI runners send)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sparkfab.errors import Unavailable, UsageError
from sparkfab.files.outputs import replace_dir


def _write(files: dict[str, str]):
    def write(tmp: Path) -> list[Path]:
        out = []
        for name, text in files.items():
            (tmp / name).write_text(text)
            out.append(tmp / name)
        return out

    return write


def test_the_working_directory_is_refused_up_front(tmp_path, monkeypatch):
    here = tmp_path / "e"
    here.mkdir()
    monkeypatch.chdir(here)
    with pytest.raises(UsageError, match="working directory"):
        replace_dir(Path("."), "render", _write({"a": "1"}))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e"]


def test_a_failed_swap_puts_the_earlier_tree_back_and_leaves_nothing_beside_it(tmp_path, monkeypatch):
    out = tmp_path / "out"
    replace_dir(out, "render", _write({"a": "old"}))
    real = Path.rename

    def failing(self: Path, target: Path) -> Path:
        if self.name.startswith(".out.new-"):
            raise OSError(16, "Device or resource busy")
        return real(self, target)

    monkeypatch.setattr(Path, "rename", failing)
    with pytest.raises(Unavailable, match="busy"):
        replace_dir(out, "render", _write({"a": "new"}))
    assert (out / "a").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("moment", ["after the old tree moved aside", "while the old tree is removed"])
def test_a_sigterm_inside_the_swap_waits_for_it(tmp_path, monkeypatch, moment):
    """SIGTERM at the worst moments of the swap (the earlier tree moved aside and the new one
    not yet in place; the earlier one half removed): the verb still ends with Terminated, and
    what it leaves is the new tree, whole, and nothing beside it."""
    import shutil as shutil_module

    from sparkfab.proc import Terminated, on_sigterm

    out = tmp_path / "out"
    replace_dir(out, "render", _write({"a": "old"}))
    real_rename, real_rmtree = Path.rename, shutil_module.rmtree

    def rename(self: Path, target: Path) -> Path:
        moved = real_rename(self, target)
        if moment.startswith("after") and self == out:
            signal.raise_signal(signal.SIGTERM)
        return moved

    def rmtree(path, *args, **kwargs):
        if moment.startswith("while") and ".out.old-" in str(path):
            signal.raise_signal(signal.SIGTERM)
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(Path, "rename", rename)
    monkeypatch.setattr(shutil_module, "rmtree", rmtree)
    previous = signal.signal(signal.SIGTERM, on_sigterm())
    try:
        with pytest.raises(Terminated):
            replace_dir(out, "render", _write({"a": "new"}))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (out / "a").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _until_sigterm_is_caught(pid: int) -> None:
    """Until the process has a handler for SIGTERM (its SigCgt mask in /proc), as the kernel
    sees it: before that, a SIGTERM ends the interpreter, not sparkfab."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.005)
    raise AssertionError(f"process {pid} did not install a SIGTERM handler within 30 s")


@pytest.mark.slow  # starts sparkfab in a subprocess and waits for its handler (about 5 s)
def test_sigterm_during_a_render_leaves_one_whole_tree(tmp_path):
    """A render of a big ring is ended by SIGTERM at several moments: the earlier tree is
    intact or the new one is whole, the exit is 143 (or the render had finished), and no
    .new-/.old- directory stays."""
    n = 300  # a ring of 300 on the management network: about 2 s of render after start-up
    hosts = {f"s{i}": {"ansible_host": f"10.0.{i // 200}.{i % 200 + 1}"} for i in range(n)}
    cables = [[f"s{i}:p0", f"s{(i + 1) % n}:p1"] for i in range(n)]
    block = {"cluster": "big", "control_plane": "management", "subnet_pool": "10.64.0.0/12", "cables": cables}
    inv = tmp_path / "big.yml"
    inv.write_text(yaml.safe_dump({"all": {"hosts": hosts, "vars": {"sparkfab": block}}}))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sparkfab", "render", str(inv), "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "fabric")}
    assert subprocess.run(cmd, env=env, capture_output=True, check=False).returncode == 0
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    ended = 0
    for delay in (0.1, 0.5, 0.9, 1.4):
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _until_sigterm_is_caught(p.pid)  # the moments count from sparkfab's handler, not exec
        time.sleep(delay)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        # a SIGTERM after the render finished can meet the interpreter's own exit, which has put
        # the default handler back (a death by the signal: 143 to a shell); the tree is whole
        finished = p.returncode == -signal.SIGTERM and b"rendered " in err
        assert p.returncode in (0, 143) or finished, err.decode()[-400:]
        ended += p.returncode == 143
        assert sorted(x.name for x in tmp_path.iterdir() if x.name.startswith(".out.")) == []
        assert sorted(str(x.relative_to(out)) for x in out.rglob("*")) == before
    assert ended, "no SIGTERM arrived while the render ran"


def test_a_file_the_user_changed_in_an_earlier_tree_is_named_when_it_is_replaced(tmp_path, capsys):
    def write(d: Path) -> list[Path]:
        (d / "a.txt").write_text("ours\n")
        (d / "b.txt").write_text("ours too\n")
        return [d / "a.txt", d / "b.txt"]

    out = tmp_path / "out"
    replace_dir(out, "render", write)
    replace_dir(out, "render", write)
    assert "changed since" not in capsys.readouterr().err  # a re-render of an untouched tree says nothing
    (out / "b.txt").write_text("my edit\n")
    replace_dir(out, "render", write)
    err = capsys.readouterr().err
    assert "b.txt changed since sparkfab wrote it; replaced now" in err and "a.txt" not in err
    assert (out / "b.txt").read_text() == "ours too\n"
