"""One way to read a file a user names (an inventory part, a recipe, a model config, a plan, a
run file, a sample file): a regular file only (a FIFO, a device or a socket would block or never
end), bounded in size, and every failure a `BadFile` that names the file and says why, mapped
to the bad-input exit code. Parsers of the contents raise BadFile too, so an unexpected shape
of outside data never ends as sparkfab's own bug."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from sparkfab.errors import Unavailable, UsageError

#: the largest file sparkfab reads whole unless a reader says otherwise
MAX_BYTES = 8 * 1024 * 1024


class BadFile(UsageError):
    """A file the user named is not what the command reads (exit 2)."""

    def __init__(self, path: str | Path, why: str) -> None:
        self.path, self.why = str(path), why
        super().__init__(f"{path}: {why}")


def regular(path: str | Path, what: str = "file") -> Path:
    """`path`, once it is known to be a regular file (symlinks followed)."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise Unavailable(f"{p}: no such {what}") from None
    except OSError as exc:
        raise Unavailable(f"{p}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise BadFile(p, f"is a directory, not a {what}")
    if not stat.S_ISREG(mode):
        raise BadFile(p, f"is not a regular file (a FIFO, device or socket): sparkfab reads a {what} from a file")
    return p


def read_bytes(path: str | Path, what: str = "file", limit: int = MAX_BYTES) -> bytes:
    """The whole file, refused (not truncated) beyond `limit` bytes."""
    p = regular(path, what)
    try:
        # O_NONBLOCK: should the path turn into a FIFO after the check, the open does not wait
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise BadFile(p, f"is not a regular file: sparkfab reads a {what} from a file")
            if st.st_size > limit:  # refused before a byte is read (a sparse file of terabytes)
                raise BadFile(p, f"is larger than {_size(limit)}: not a {what} sparkfab reads")
            data = f.read(limit + 1)
    except OSError as exc:
        raise Unavailable(f"{p}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise BadFile(p, f"is larger than {_size(limit)}: not a {what} sparkfab reads")
    return data


def read_text(path: str | Path, what: str = "file", limit: int = MAX_BYTES) -> str:
    """The file as UTF-8 text (a BOM dropped); a decode error names the line, not the text."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadFile(path, f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def read_json(path: str | Path, what: str = "JSON file", limit: int = MAX_BYTES) -> Any:
    """The file's JSON document; too deep a nesting or an unreadable number is a BadFile too."""
    return loads(read_text(path, what, limit), path)


def loads(text: str, where: str | Path) -> Any:
    """JSON from outside (a file, a server's answer), every failure a BadFile naming `where`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadFile(where, f"not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise BadFile(where, "JSON nested too deep") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise BadFile(where, f"not JSON sparkfab reads ({str(exc)[:80]})") from None


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"
