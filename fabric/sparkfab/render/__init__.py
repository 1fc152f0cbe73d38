"""Pure generators: Plan in, text out. No file, clock, subprocess or network access here;
`sparkfab.writer` is the one module that touches the filesystem."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class File:
    """One generated file, at the path it will have on the host."""

    path: str
    content: str
    mode: int = 0o644
