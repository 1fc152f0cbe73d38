"""What the checks need of a host: the small part of a testinfra Host they call. Checks are
written against this protocol, so a table of answers (`tests/doubles/host.py`) can stand in
for a Spark in unit tests, and testinfra's ssh backend is the one used against real hosts."""

from __future__ import annotations

from typing import Any, Protocol


class Answer(Protocol):
    @property
    def rc(self) -> int: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...


class RemoteFile(Protocol):
    @property
    def exists(self) -> bool: ...
    @property
    def content_string(self) -> str: ...


class Remote(Protocol):
    def run(self, command: str, *args: Any) -> Answer: ...
    def check_output(self, command: str, *args: Any) -> str: ...
    def sysctl(self, name: str) -> Any: ...
    def file(self, path: str) -> RemoteFile: ...
