"""The `sparkfab` command line: one verb per subcommand, the same flags everywhere.

Data goes to stdout, logs and errors to stderr. Exit codes: 0 ok, 1 internal error (a bug),
2 bad input or usage, 3 deploy error, 4 verification failed, 5 a file, directory or server
that is missing, unreadable or misbehaving.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from sparkfab import __version__
from sparkfab.errors import Exit, InventoryError, SparkfabError, Unavailable

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {}


def command(
    name: str, help_text: str, setup: Callable[[argparse.ArgumentParser], None]
) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        _COMMANDS[name] = (help_text, setup, fn)
        return fn

    return wrap


def _short(text: str, width: int = 300) -> str:
    """Messages stay readable whatever the input held: long lines are cut."""
    return "\n".join(line if len(line) <= width else line[: width - 3] + "..." for line in text.splitlines())


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def _parser() -> argparse.ArgumentParser:
    from sparkfab import commands  # noqa: F401  (registers the verbs)

    p = argparse.ArgumentParser(prog="sparkfab", description=__doc__.splitlines()[0] if __doc__ else "")
    p.add_argument("--version", action="version", version=f"sparkfab {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, (help_text, setup, fn) in _COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.add_argument("-v", "--verbose", action="count", default=0, help="more logging on stderr")
        sp.add_argument("-q", "--quiet", action="store_true", help="only errors on stderr")
        setup(sp)
        sp.set_defaults(handler=fn)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = (
        logging.ERROR
        if args.quiet
        else (logging.DEBUG if args.verbose > 1 else logging.INFO if args.verbose else logging.WARNING)
    )
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return int(args.handler(args))
    except InventoryError as exc:
        sys.stderr.write(_short(exc.render()) + "\n")
        return exc.exit_code
    except SparkfabError as exc:
        sys.stderr.write(_short(f"sparkfab: {exc}") + "\n")
        return exc.exit_code
    except OSError as exc:  # a file or socket the user named: missing, unreadable, not writable
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(_short(f"sparkfab: {where}{exc.strerror or exc}") + "\n")
        return Unavailable.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("sparkfab: interrupted\n")
        return 130
    except Exception as exc:
        with tempfile.NamedTemporaryFile("w", prefix="sparkfab-crash-", suffix=".txt", delete=False) as f:
            traceback.print_exc(file=f)
        sys.stderr.write(f"sparkfab: internal error: {exc!r} (traceback in {f.name})\n")
        return Exit.BUG
