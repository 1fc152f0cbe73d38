"""The `sparkfab` command line: one verb per subcommand, the same flags everywhere.

Data goes to stdout, logs and errors to stderr. Exit codes: 0 ok, 1 internal error (a bug),
2 bad input or usage, 3 deploy error, 4 verification failed, 5 a file, directory or server
that is missing, unreadable or misbehaving.
"""

from __future__ import annotations

import argparse
import io
import logging
import signal
import sys
import tempfile
import traceback
from collections.abc import Sequence

from sparkfab import __version__, others
from sparkfab.commands import (
    bench_cmd,
    collection_cmd,
    completion_cmd,
    deploy_cmd,
    discover_cmd,
    estimate_cmd,
    exporter_cmd,
    fit_cmd,
    graph_cmd,
    init_cmd,
    inventory_cmd,
    lab_cmd,
    peer_ssh_cmd,
    preflight_cmd,
    render_cmd,
    sample_cmd,
    serve_cmd,
    verify_cmd,
)
from sparkfab.commands.common import Verb
from sparkfab.errors import Exit, InventoryError, SparkfabError, Unavailable, readable
from sparkfab.proc import Terminated, interruption, on_sigterm

#: every verb, in the order `sparkfab --help` lists them
VERBS: tuple[Verb, ...] = (
    *inventory_cmd.VERBS,  # validate, plan, schema
    *init_cmd.VERBS,
    *render_cmd.VERBS,
    *graph_cmd.VERBS,
    *lab_cmd.VERBS,
    *preflight_cmd.VERBS,
    *deploy_cmd.VERBS,  # apply, linkspeed, reset
    *peer_ssh_cmd.VERBS,
    *serve_cmd.VERBS,
    *exporter_cmd.VERBS,
    *verify_cmd.VERBS,
    *discover_cmd.VERBS,
    *estimate_cmd.VERBS,
    *fit_cmd.VERBS,
    *sample_cmd.VERBS,  # sample, traffic
    *bench_cmd.VERBS,  # bench, battery, report
    *collection_cmd.VERBS,
    *completion_cmd.VERBS,
)


class _Version(argparse.Action):
    """--version: sparkfab's and what it runs (worked out only when asked)."""

    def __call__(self, p: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(version_text())
        p.exit()


def version_text() -> str:
    """sparkfab's version and what it runs with: ansible-core, ansible-runner and the strategy the
    playbooks run with, where the playbooks, roles and recipes come from, whether the sampler's C
    read loop is built, and the engine releases whose parsers wrote the flag tables."""
    import importlib.metadata as md
    import importlib.util
    import os

    from sparkfab import engines
    from sparkfab.engines import flags
    from sparkfab.paths import repo_dir
    from sparkfab.push.env import strategy_env

    def version(dist: str) -> str:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "not installed"

    strategy = strategy_env(dict(os.environ)).get("ANSIBLE_STRATEGY") or os.environ.get("ANSIBLE_STRATEGY", "linear")
    mitogen = f" (mitogen {version('mitogen')})" if strategy.startswith("mitogen") else ""
    content = repo_dir("playbooks").parent
    where = (
        "SPARKFAB_HOME"
        if os.environ.get("SPARKFAB_HOME")
        else "the package"
        if content.name == "_shipped"
        else "a checkout"
    )
    built = importlib.util.find_spec("sparkfab.measure.counters._sampleloop") is not None
    extras = ", ".join(
        f"{extra} ({dist} {version(dist)})" if version(dist) != "not installed" else f"{extra}: not installed"
        for extra, dist in (("plots", "matplotlib"), ("lab", "pyroute2"))
    )
    tables = ", ".join(f"{e.name} {flags.version(e)}" if e.flags_file else e.name for e in engines.ENGINES.values())
    return (
        f"sparkfab {__version__}\n"
        f"ansible-core {version('ansible-core')}, ansible-runner {version('ansible-runner')}, "
        f"strategy {strategy}{mitogen}\n"
        f"content (playbooks, roles, launchers, ansible.cfg): {content} ({where})\n"
        f"sampler: {'C read loop built' if built else 'Python read loop (the C loop is not built)'}\n"
        f"engines (flag tables): {tables}\n"
        f"extras: {extras}\n"
    )


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only` (the verb a command line names), the other verbs are
    listed without their arguments (setting them all up costs a start-up of every verb)."""
    p = argparse.ArgumentParser(prog="sparkfab", description=__doc__.splitlines()[0] if __doc__ else "")
    p.add_argument("--version", action=_Version, nargs=0, help="what runs: sparkfab, Ansible, the content, the sampler")
    sub = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb in VERBS:
        sp = sub.add_parser(verb.name, help=verb.help, description=verb.help)
        if only is not None and verb.name != only:
            continue
        sp.add_argument("-v", "--verbose", action="count", default=0, help="more logging on stderr")
        sp.add_argument("-q", "--quiet", action="store_true", help="only errors on stderr")
        verb.setup(sp)
        sp.set_defaults(handler=verb.handler, root_parser=p)
    return p


def _verb(argv: Sequence[str]) -> str | None:
    """The verb a command line names (its first word that is not an option), when it is one that
    needs only its own arguments (`completion` reads every verb's)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in {v.name for v in VERBS} - {"completion"} else None


def main(argv: Sequence[str] | None = None) -> int:
    # a C locale or PYTHONIOENCODING=ascii: the files sparkfab writes and reads are UTF-8 all the
    # same (reports, records, rendered trees), and text on the terminal that its encoding cannot
    # show (labels, names, answers) is written escaped rather than ending the command
    _utf8_files()
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    words = sys.argv[1:] if argv is None else argv
    others.keep_quiet(_verbosity(words))  # before the verbs' modules load: an import may warn
    try:
        args = parser(_verb(words)).parse_args(words)  # a signal here (a slow start-up) ends it as one later does
    except (KeyboardInterrupt, Exception) as exc:
        if interruption(exc) is None:
            raise
        return _ended(exc)
    # SIGTERM (timeout, systemd, CI runners) ends a verb as Ctrl-C does: outputs half written
    # are removed, locks released, children ended by the code that started them
    previous = signal.signal(signal.SIGTERM, on_sigterm()) if _main_thread() else None
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _verbosity(words: Sequence[str]) -> int:
    """How many -v a command line gives (as its verb's parser will count them), before parsing."""
    count = 0
    for w in words:
        if w == "--":
            break
        if w == "--verbose":
            count += 1
        elif w.startswith("-") and not w.startswith("--") and set(w[1:]) == {"v"}:
            count += len(w) - 1
    return count


def _utf8_files() -> None:
    """open() and Path.read_text/write_text without an encoding take the locale's: make it UTF-8
    for this process (not its children, whose environment is left as it is)."""
    import locale

    if locale.getpreferredencoding(False).lower().replace("-", "") != "utf8":
        for name in ("C.UTF-8", "C.utf8", "en_US.UTF-8"):
            try:
                locale.setlocale(locale.LC_CTYPE, name)
                return
            except locale.Error:
                continue


def _inventory(args: argparse.Namespace) -> None:
    """The verb's one inventory (INVENTORY, -i, ANSIBLE_INVENTORY or ansible.cfg), and its vault
    password file for Ansible here and in every run (the environment carries it)."""
    import os
    from pathlib import Path

    from sparkfab.commands.common import inventory_source

    needed = getattr(args, "inventory_needed", None)
    if hasattr(args, "inventory_opts") and (needed is None or needed(args)):
        args.inventory = inventory_source(args, dict(os.environ), Path.cwd())
    if getattr(args, "vault_password_file", None):
        os.environ["ANSIBLE_VAULT_PASSWORD_FILE"] = os.path.abspath(args.vault_password_file)


def _ended(exc: BaseException) -> int:
    """Ctrl-C (130) or SIGTERM (143), said in a line (an interrupted Ansible run carries which
    one as its cause; an import that a signal met, Python's RuntimeError around it)."""
    ended = isinstance(interruption(exc), Terminated)
    sys.stderr.write("sparkfab: terminated\n" if ended else "sparkfab: interrupted\n")
    return Exit.TERMINATED if ended else Exit.INTERRUPTED


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _run(args: argparse.Namespace) -> int:
    level = (
        logging.ERROR
        if args.quiet
        else (logging.DEBUG if args.verbose > 1 else logging.INFO if args.verbose else logging.WARNING)
    )
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        _inventory(args)
        return int(args.handler(args))
    except InventoryError as exc:
        sys.stderr.write(readable(exc.render()) + "\n")
        return exc.exit_code
    except SparkfabError as exc:
        sys.stderr.write(readable(f"sparkfab: {exc}") + "\n")
        return exc.exit_code
    except OSError as exc:  # a file or socket the user named: missing, unreadable, not writable
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(readable(f"sparkfab: {where}{exc.strerror or exc}") + "\n")
        return Unavailable.exit_code
    except KeyboardInterrupt as exc:
        return _ended(exc)
    except Exception as exc:
        if interruption(exc) is not None:  # a signal that Python wrapped in an error of its own
            return _ended(exc)
        with tempfile.NamedTemporaryFile("w", prefix="sparkfab-crash-", suffix=".txt", delete=False) as f:
            traceback.print_exc(file=f)
        sys.stderr.write(f"sparkfab: internal error: {exc!r} (traceback in {f.name})\n")
        return Exit.BUG
