"""A host's facts gathered in one round trip.

The checks ask a `Remote` for command outputs, sysctls and files one at a time; over SSH each
ask is a round trip (an RDMA device alone is some seventy reads: state, rate, counters and the
GID table). `prefetch` runs every command the checks will send and reads every file they will
read in one command on the host (`assets/gather.py`, run with the host's python3: commands run
side by side, so the jumbo pings of all ports take as long as one), and answers the checks from what came back. Each
command's answer is used once (a check that asks again, such as the cabling retry, goes to the
host); a command or file the list did not name goes to the host as before, and so does
everything when the host cannot run the program. A file that exists but cannot be read (sysfs
answers EINVAL for an unused GID slot) reads as absent.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from sparkfab.assets import program
from sparkfab.facts.remote import Remote

#: the program that gathers them on the host (`assets/gather.py`)
_PROGRAM = "gather.py"


@dataclass(frozen=True)
class Reply:
    rc: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class FileReply:
    exists: bool
    content_string: str


class Prefetched:
    """A `Remote` that answers from one gathering, and asks `th` for anything else."""

    def __init__(self, th: Remote, answers: dict[str, Reply], files: dict[str, str | None]) -> None:
        self.th, self._answers, self._files = th, answers, files
        self.live: list[str] = []  # what was not in the gathering and went to the host

    def __getattr__(self, name: str) -> Any:  # the rest of the host (backend, modules) as it is
        return getattr(self.th, name)

    def run(self, command: str, *args: Any) -> Reply | Any:
        if not args and command in self._answers:
            return self._answers.pop(command)
        self.live.append(command)
        return self.th.run(command, *args)

    def check_output(self, command: str, *args: Any) -> str:
        res = self.run(command, *args)
        assert res.rc == 0, f"Unexpected exit code {res.rc} for {command}: {res.stderr}"
        return str(res.stdout).rstrip("\r\n")

    def sysctl(self, name: str) -> Any:
        command = sysctl_command(name)
        if command not in self._answers:
            self.live.append(command)
            return self.th.sysctl(name)
        value = self.check_output(command)
        try:
            return int(value)
        except ValueError:
            return value

    def file(self, path: str) -> FileReply | Any:
        if path not in self._files:
            self.live.append(path)
            return self.th.file(path)
        content = self._files[path]
        return FileReply(content is not None, content or "")


def sysctl_command(name: str) -> str:
    return f"sysctl -n {shlex.quote(name)}"


def prefetch(th: Remote, commands: list[str], files: list[str]) -> Prefetched:
    """Gather `commands` (run side by side) and `files` from `th` in one command."""
    ask = json.dumps({"commands": list(dict.fromkeys(commands)), "files": list(dict.fromkeys(files))})
    try:
        res = th.run(f"python3 -c {shlex.quote(program(_PROGRAM))} {shlex.quote(ask)}")
        got = json.loads(res.stdout) if res.rc == 0 else {}
    except (ValueError, RuntimeError, AssertionError):
        got = {}
    answers = {c: Reply(int(a[0]), str(a[1]), str(a[2])) for c, a in (got.get("commands") or {}).items()}
    return Prefetched(th, answers, dict(got.get("files") or {}))
