"""An engine's flag table (`launchers/<engine>-serve-flags.txt`, written from the engine's own
argument parser by its oracle asset): every option string, what it takes and its choices, and
what the engine's parser would refuse in a flag as sparkfab renders it. Where the engine itself
is installed, `sparkfab.oracle` asks its parser too."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sparkfab.engines.base import Engine
from sparkfab.paths import repo_dir

#: what a flag takes, as the table says
SWITCHES = ("switch", "bool")
_SIZE = re.compile(r"^([0-9]+|[0-9]+(\.[0-9]+)?[kmgt]|[0-9]+[KMGT])\Z")
_SCALE = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def size_value(value: object) -> int | None:
    """A `size` flag's value as vLLM's `human_readable_int` reads it (1k = 1,000, 1K = 1,024, a
    decimal only with a lower-case suffix); None when vLLM would refuse it."""
    text = str(value).strip()
    if not _SIZE.match(text):
        return None
    if text[-1] in _SCALE:
        return int(float(text[:-1]) * _SCALE[text[-1]])
    return int(text)


@dataclass(frozen=True)
class Flag:
    """One option string: what it takes and its choices."""

    name: str  # with the dashes, e.g. --max-model-len
    takes: str  # switch, bool (a switch with a --no- form), int, float, size, size|auto, json, json|text, text
    choices: tuple[str, ...] = ()


def _text(name: str) -> str:
    """A flag table, read as every file a user can name is (`SPARKFAB_HOME` moves `launchers/`):
    a regular file of bounded size, UTF-8, refused by name otherwise (a FIFO would block)."""
    return _read(str(repo_dir("launchers") / name))


@cache
def _read(path: str) -> str:
    """One table file's text, read once per path (a `SPARKFAB_HOME` set later names another)."""
    from sparkfab.files import userfile

    return userfile.read_text(Path(path), "flag table", 4 << 20)


def table(engine: Engine) -> dict[str, Flag]:
    """Every option string of the engine's server with what it takes, as the parser of the
    release in the file's header defines them; empty for an engine without a table."""
    if engine.flags_file is None:
        return {}
    return _parse(_text(engine.flags_file))


@cache
def _parse(text: str) -> dict[str, Flag]:
    out = {}
    for line in text.splitlines():
        if line.startswith("--"):
            name, takes, *rest = line.split("\t") + ["text"] * (line.count("\t") == 0)
            out[name] = Flag(name, takes, tuple(rest[0].split(",")) if rest else ())
    return out


def names(engine: Engine) -> frozenset[str]:
    return frozenset(table(engine))


def version(engine: Engine) -> str:
    """The release whose parser wrote the table (its header's `# <dist> <version>` line)."""
    if engine.flags_file is None or engine.oracle is None:
        return "(no flag table)"
    for line in _text(engine.flags_file).splitlines():
        if line.startswith(f"# {engine.oracle.dist} "):
            return line.split()[2]
    return "(unknown version)"


def value_problem(engine: Engine, name: str, value: object) -> str | None:
    """What the engine's parser would refuse in `--name value` as sparkfab renders it (true: the
    bare flag, false: `--no-name`, None: left out), judged by the flag table; None when it would
    take it. The table knows types and choices, not every check the engine makes."""
    known = table(engine)
    flag = known.get(f"--{name}")
    if flag is None or value is None:
        return None
    if isinstance(value, bool):
        if flag.takes not in SWITCHES:
            return f"--{name} takes a value ({flag.takes}), not {str(value).lower()}"
        if value is False and f"--no-{name}" not in known:
            return f"--{name} has no --no-{name} form: false would render a flag {engine.name} does not have"
        return None
    text = str(value)
    if text.split("=", 1)[0] in known and text.startswith("-"):
        return f"{text!r} is a flag of {engine.name}, not a value of --{name}: give each flag its own key"
    if flag.takes in SWITCHES:
        return f"--{name} is a switch: write true{' or false' if flag.takes == 'bool' else ''}, not {text!r}"
    if flag.choices and text not in flag.choices:
        return f"{text!r} is not a choice of --{name} ({', '.join(flag.choices)})"
    return None if _fits(flag.takes, text) else f"{text!r} is not a {flag.takes} value (--{name})"


def _fits(takes: str, text: str) -> bool:
    try:
        if takes == "int":
            int(text)
        elif takes == "float":
            float(text)
        elif takes in ("size", "size|auto"):
            return size_value(text) is not None or (takes == "size|auto" and text.strip().lower() in ("auto", "-1"))
        elif takes == "json":
            json.loads(text)
    except ValueError:
        return False
    return True
