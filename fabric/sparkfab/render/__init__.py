"""Pure generators: Plan in, text out. No clock, subprocess or network access here, and no file
is read but sparkfab's own templates (package data, `render.text`); `sparkfab.render.writer` is the one
module that writes to the filesystem."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class File:
    """One generated file, at the path it will have on the host."""

    path: str
    content: str
    mode: int = 0o644
