"""The exception tree of sparkfab and the exit codes the CLI maps it to.

SparkfabError                exit 1 (internal) unless a subclass says otherwise
├── InventoryError           exit 2: the inventory is invalid (carries every Problem)
├── UsageError               exit 2: a bad flag or argument combination
├── RenderError              exit 1: a generator could not produce a file
├── DeployError              exit 3: Ansible failed on a host (names host and task)
├── LabError                 exit 1: the namespace lab could not be built or removed
├── VerifyError              exit 4: a verification failed
├── EstimateError            exit 2: the model description is unusable
└── BenchError               exit 1: the benchmark could not run
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One user-facing problem: where it is, what is wrong, how to fix it."""

    path: str
    message: str
    hint: str = ""
    line: int | None = None

    def render(self, source: str = "") -> str:
        where = f"{source}:{self.line}: " if source and self.line else ""
        text = f"{where}{self.path}: {self.message}"
        return f"{text}\n    hint: {self.hint}" if self.hint else text


class SparkfabError(Exception):
    exit_code = 1


class InventoryError(SparkfabError):
    exit_code = 2

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = sorted(problems, key=lambda p: (p.line or 0, p.path))
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        head = f"{self.source}: {len(self.problems)} problem(s) in the inventory"
        return "\n".join([head, *(p.render(self.source) for p in self.problems)])


class UsageError(SparkfabError):
    exit_code = 2


class RenderError(SparkfabError):
    exit_code = 1


class DeployError(SparkfabError):
    exit_code = 3


class LabError(SparkfabError):
    exit_code = 1


class VerifyError(SparkfabError):
    exit_code = 4


class EstimateError(SparkfabError):
    exit_code = 2


class BenchError(SparkfabError):
    exit_code = 1
