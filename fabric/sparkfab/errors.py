"""The exception tree of sparkfab and the exit codes the CLI maps it to.

SparkfabError                exit 1 (internal) unless a subclass says otherwise
├── InventoryError           exit 2: the inventory is invalid (carries every Problem)
├── UsageError               exit 2: a bad flag, argument combination or input file
│   ├── EstimateError        exit 2: the model description is unusable
│   └── BenchError           exit 2: the benchmark plan or options are unusable
├── RenderError              exit 2: a launch recipe could not produce a file
├── DeployError              exit 3: Ansible failed on a host (names host and task)
├── LabError                 exit 3: the namespace lab could not be built or removed
├── VerifyError              exit 4: a verification failed
└── Unavailable              exit 5: a file, directory or server sparkfab needs is missing,
    │                                 unreadable, not writable or misbehaving
    └── ServerError          exit 5: the server did not answer or broke the protocol

Exit 1 is left for sparkfab's own bugs (an exception no one expected).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Exit(IntEnum):
    """The exit codes of every verb (the table above and in the README)."""

    OK = 0
    BUG = 1
    USAGE = 2  # bad input: an invalid inventory, flag or file
    DEPLOY = 3  # Ansible (or the lab build) failed on a host
    CHECK = 4  # a verification, preflight or quality check failed
    UNAVAILABLE = 5  # something sparkfab needs is missing or misbehaving
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)
    TERMINATED = 143  # SIGTERM (128 + SIGTERM)


#: what each exit code means, for people (the CLI reference is generated from it)
EXIT_MEANING: dict[Exit, str] = {
    Exit.OK: "done: everything checked passed, everything asked was done",
    Exit.BUG: "an internal error: one line, and where its traceback was written",
    Exit.USAGE: "bad input: an invalid inventory (every problem at once), flag or file",
    Exit.DEPLOY: "Ansible (or the lab's build) failed on a host: the host and the task are named",
    Exit.CHECK: "a check failed (verify, preflight, discover's odd findings, the quality battery)",
    Exit.UNAVAILABLE: "something sparkfab needs is missing or busy (a program, a file, another verb's lock)",
    Exit.INTERRUPTED: "interrupted with Ctrl-C: half-written outputs removed, children ended",
    Exit.TERMINATED: "ended by SIGTERM, as Ctrl-C ends it",
}


@dataclass(frozen=True)
class Problem:
    """One user-facing problem: where it is, what is wrong, how to fix it."""

    path: str
    message: str
    hint: str = ""
    line: int | None = None
    #: the file `line` is in, where it is not the inventory's own (a host_vars/ file, hosts.ini)
    file: str = ""

    def render(self, source: str = "") -> str:
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        else:
            where = f"{source}:{self.line}: " if source and self.line else ""
        text = f"{where}{self.path}: {self.message}"
        return f"{text}\n    hint: {self.hint}" if self.hint else text


class SparkfabError(Exception):
    exit_code: int = Exit.BUG


class InventoryError(SparkfabError):
    exit_code = Exit.USAGE

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = sorted(problems, key=lambda p: (p.line or 0, p.path))
        self.source = source
        super().__init__(self.render())

    def render(self, limit: int = 40) -> str:
        head = f"{self.source}: {len(self.problems)} problem(s) in the inventory"
        shown = [p.render(self.source) for p in self.problems[:limit]]
        more = [f"... and {len(self.problems) - limit} more"] if len(self.problems) > limit else []
        return "\n".join([head, *shown, *more])


class UsageError(SparkfabError):
    exit_code = Exit.USAGE


class RenderError(SparkfabError):
    exit_code = Exit.USAGE


class DeployError(SparkfabError):
    exit_code = Exit.DEPLOY


class LabError(SparkfabError):
    exit_code = Exit.DEPLOY


class VerifyError(SparkfabError):
    exit_code = Exit.CHECK


class EstimateError(UsageError):
    pass


class BenchError(UsageError):
    pass


class Unavailable(SparkfabError):
    exit_code = Exit.UNAVAILABLE


class ServerError(Unavailable):
    pass


def readable(text: str, width: int = 300) -> str:
    """Messages stay readable whatever the input held: control characters shown, not obeyed
    (an ESC from a name would set the terminal's title or clear it), long lines cut."""
    text = text.translate(_CONTROLS)
    return "\n".join(line if len(line) <= width else _middle(line, width) for line in text.splitlines())


def _middle(line: str, width: int) -> str:
    """A long line fitted to `width`: its longest word (a path, a value) shortened in the middle
    first, so both the culprit and the reason after it stay (`PATH: File name too long`), then
    the line itself in its middle."""
    words = line.split(" ")
    longest = max(range(len(words)), key=lambda i: len(words[i]))
    over = len(line) - width
    word = words[longest]
    if len(word) - over >= 24:
        keep = len(word) - over - 3
        words[longest] = word[: keep // 2] + "..." + word[len(word) - (keep - keep // 2) :]
        return " ".join(words)
    tail = width // 3
    return line[: width - tail - 5] + " ... " + line[-tail:]


#: C0 and C1 control characters but line feed and tab, as Python writes them in a literal
_CONTROLS = {c: repr(chr(c))[1:-1] for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in "\n\t"}
