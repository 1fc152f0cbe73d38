"""Argument types with bounds: a bad value is a usage error (exit 2) that names the flag,
raised by argparse before any work starts."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit


def integer(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside {lo:,}-{hi:,}")
        return value

    parse.__name__ = "integer"
    return parse


def number(lo: float, hi: float, lo_open: bool = False) -> Callable[[str], float]:
    """A finite float in [lo, hi] (or (lo, hi] with lo_open)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        below = value <= lo if lo_open else value < lo
        if not math.isfinite(value) or below or value > hi:
            side = "(" if lo_open else "["
            raise argparse.ArgumentTypeError(f"{text} is outside {side}{lo:g}, {hi:g}]")
        return value

    parse.__name__ = "number"
    return parse


_UNITS = (("us", 1e-6), ("ms", 1e-3), ("s", 1.0))


def seconds(text: str) -> float:
    """`1ms`, `250us`, `2s` or plain seconds."""
    t = text.strip().lower()
    scale = 1.0
    for unit, factor in _UNITS:
        if t.endswith(unit):
            t, scale = t[: -len(unit)], factor
            break
    try:
        value = float(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a duration (e.g. 1ms, 250us, 2s)") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive duration")
    return value


def interval(lo: float, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = seconds(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text} is outside {lo * 1e3:g} ms-{hi:g} s")
        return value

    parse.__name__ = "interval"
    return parse


def interval_list(lo: float, hi: float, most: int = 16) -> Callable[[str], list[float]]:
    one = interval(lo, hi)

    def parse(text: str) -> list[float]:
        parts = [p for p in text.split(",") if p.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("give at least one interval, e.g. 1ms,100ms")
        if len(parts) > most:
            raise argparse.ArgumentTypeError(f"{len(parts)} intervals: at most {most}")
        return [one(p) for p in parts]

    parse.__name__ = "intervals"
    return parse


def window(text: str) -> tuple[float, float]:
    start, sep, end = text.partition(":")
    try:
        a, b = float(start), float(end)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not START:END in seconds") from None
    if not sep or not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b <= a:
        raise argparse.ArgumentTypeError(f"'{text}' is not START:END with 0 <= START < END")
    return a, b


def http_url(text: str) -> str:
    """An http(s) URL with a host and a valid port."""
    u = urlsplit(text)
    try:
        port = u.port
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' has an invalid port") from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise argparse.ArgumentTypeError(f"'{text}' is not an http:// or https:// URL with a host")
    if u.query or u.fragment or "?" in text or "#" in text:
        # the API's paths are appended to it: a query would swallow them
        raise argparse.ArgumentTypeError(f"'{text}': give the server's base URL, without a query or fragment")
    if not text.isascii() or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"'{text}': a URL is ASCII without spaces")
    if u.username is not None or u.password is not None:
        # the URL is written into the run's files (run.json, the report): a password would be
        # kept at rest there; the message does not repeat it
        shown = f"{u.scheme}://***@{u.hostname}{f':{port}' if port else ''}{u.path}"
        raise argparse.ArgumentTypeError(
            f"'{shown}' carries a login in the URL, which sparkfab would write into the run's files: "
            "give the server's key with --api-key-env NAME instead"
        )
    del port
    return text.rstrip("/")


_DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}\Z")


def device_list(text: str) -> list[str]:
    """Comma-separated netdev or RDMA device names (never a path)."""
    names = [d.strip() for d in text.split(",") if d.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one device")
    bad = [d for d in names if not _DEVICE.match(d) or d in (".", "..")]
    if bad:
        raise argparse.ArgumentTypeError(f"'{bad[0]}' is not a device name")
    return names


def choices(known: Iterable[str]) -> Callable[[str], list[str]]:
    """A comma-separated subset of `known`."""
    names = list(known)

    def parse(text: str) -> list[str]:
        picked = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in picked if x not in names]
        if bad or not picked:
            raise argparse.ArgumentTypeError(f"'{(bad or [text])[0]}' is not one of {', '.join(names)}")
        return picked

    parse.__name__ = "choices"
    return parse


def path(text: str) -> Path:
    """A path the user named; an empty one is refused (it would mean the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path: name a file or directory")
    return Path(text)


def file_path(text: str) -> Path:
    """A file the user names for an output: not empty, and not written as a directory (a
    trailing slash would be dropped by Path, and the file written where a folder was meant)."""
    if text.endswith("/"):
        raise argparse.ArgumentTypeError(f"{text!r} names a directory (its trailing /): name a file")
    return path(text)


def line(most: int) -> Callable[[str], str]:
    """Printable text on one line, not empty, at most `most` characters (a model name, a label)."""

    def parse(text: str) -> str:
        if not text.strip() or len(text) > most or not text.isprintable():
            raise argparse.ArgumentTypeError(f"{text[:80]!r}: printable text on one line, 1-{most} characters")
        return text

    parse.__name__ = "text"
    return parse


def host_name(text: str) -> str:
    """An IP address or a DNS name, nothing a shell or ssh would read as more."""
    from sparkfab.inventory import hostname

    try:
        return hostname(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def key_value(text: str) -> tuple[str, str]:
    """KEY=VALUE (as `vllm bench serve --metadata` takes it): a short key of letters, digits,
    `_`, `.` and `-`, and a value of printable text up to 512 characters."""
    key, eq, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}", key):
        raise argparse.ArgumentTypeError(f"{text[:80]!r}: write KEY=VALUE (a key of letters, digits, _ . -)")
    if len(value) > 512 or not value.isprintable():
        raise argparse.ArgumentTypeError(f"{key}: the value must be printable text of at most 512 characters")
    return key, value
