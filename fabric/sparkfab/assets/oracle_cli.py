"""What the engine oracles (`vllm_oracle.py`, `sglang_oracle.py`) share: the rows of a flag table
read from an argparse parser, writing or checking the table file, and their three verbs (`flags
--out FILE [--check]`, `check` on stdin, `serve` on a Unix socket). Standard library only: it runs
in each engine's Python, which has no sparkfab installed (the oracles find it beside themselves).

`serve --socket PATH --idle S` keeps one engine's import warm between validates: importing vLLM
takes most of a validate (torch alone is seconds), and every answer after the first reuses it.
Its protocol is `check`'s over one connection: a request line ({"launches": [...]}, or
{"stop": true}), one answer line back. It answers until S seconds pass without a request, then
exits and removes its socket. One server per socket path: a second one finds the path's lock
held and exits at once."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: argparse actions that take no value
SWITCH_ACTIONS = ("_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction", "_CountAction")


def table_text(parser: argparse.ArgumentParser, takes: Callable[[Any], str], header: str, release: str) -> str:
    """The flag table: the header, `# <dist> <version>`, then per option string a tab-separated
    line of the string, what it takes (a `--no-` form of a bool is a switch) and its choices
    (a set's in sorted order, so that the table does not change between runs)."""
    rows = []
    for a in parser._actions:
        kind = takes(a)
        options = a.choices or ()
        choices = ",".join(sorted(map(str, options)) if isinstance(options, set | frozenset) else map(str, options))
        for s in a.option_strings:
            if s.startswith("--") and s != "--help":
                no_form = kind == "bool" and s.startswith("--no-")
                rows.append("\t".join(x for x in (s, "switch" if no_form else kind, choices) if x))
    return header + f"# {release}\n" + "".join(r + "\n" for r in sorted(rows))


def write_or_check(out: Path, new: str, header: str, check: bool) -> int:
    """Write the table to `out`; with `check`, exit 1 (saying what differs) when `out` is not it."""
    if check:
        old = out.read_text() if out.exists() else ""
        if old != new:
            gone = sorted(set(old.splitlines()) - set(new.splitlines()))
            added = sorted(set(new.splitlines()) - set(old.splitlines()))
            sys.stderr.write(f"stale: {len(added)} line(s) to add {added[:5]}, {len(gone)} to drop {gone[:5]}\n")
            return 1
        return 0
    out.write_text(new)
    sys.stderr.write(f"wrote {out} ({new.count(chr(10)) - header.count(chr(10)) - 1} option strings)\n")
    return 0


def parse_quietly(parser: argparse.ArgumentParser, args: list[str]) -> tuple[argparse.Namespace | None, str]:
    """`args` as the engine's parser reads them: (namespace, "") or, where it refuses them (an
    argparse exit), (None, the last line it wrote to stderr: its reason)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(args), ""
    except SystemExit:
        return None, last_line(err.getvalue()) or "exit"


def last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


#: the largest request line a server reads (a few hundred launches' argv)
MAX_REQUEST = 16 << 20


def _read_line(conn: socket.socket) -> bytes:
    buf = b""
    while b"\n" not in buf and len(buf) < MAX_REQUEST:
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf.split(b"\n", 1)[0]


def serve(
    path: Path,
    idle_s: float,
    check_one: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    version: Callable[[], str],
) -> int:
    """Answer check requests on the Unix socket `path` until `idle_s` pass without one."""
    lock = open(f"{path}.lock", "a")  # noqa: SIM115 - held for the server's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server starts or serves at this path
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a server that died left it
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is its owner's alone
    try:
        srv.bind(str(path))
    finally:
        os.umask(old)
    mine = path.stat().st_ino
    srv.listen(16)  # before the import: a client connects at once and waits for its answer
    try:
        check_one([])  # the engine's import and its parser, once
        failed = ""
    except Exception as exc:  # said to every client, which then asks the engine without a server
        failed = f"{type(exc).__name__}: {last_line(str(exc))}"
        sys.stderr.write(f"the engine's checks could not start: {failed}\n")
        sys.stderr.flush()
    srv.settimeout(idle_s)
    try:
        while True:
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                return 0
            with conn:
                conn.settimeout(60)
                try:
                    request = json.loads(_read_line(conn) or b"{}")
                    if failed:
                        answer: dict[str, Any] = {"failed": failed}
                    elif request.get("stop"):
                        answer = {"stopped": os.getpid()}
                    else:
                        answer = {"version": version(), "results": check_one(request["launches"])}
                except Exception as exc:  # one bad request ends that request, not the server
                    answer = {"failed": f"{type(exc).__name__}: {last_line(str(exc))}"}
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps(answer).encode() + b"\n")
                if failed or "stopped" in answer:
                    return 1 if failed else 0
    finally:
        with contextlib.suppress(OSError):
            if path.stat().st_ino == mine:
                path.unlink()
        srv.close()


def main(
    doc: str | None,
    flags_text: Callable[[], str],
    header: str,
    check_one: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    version: Callable[[], str],
) -> int:
    """The oracle's command line: `flags --out FILE [--check]`, `check` (launches on stdin, one
    JSON line of results on stdout), or `serve --socket PATH --idle S`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else "")
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("flags")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--check", action="store_true")
    sub.add_parser("check")
    v = sub.add_parser("serve")
    v.add_argument("--socket", type=Path, required=True)
    v.add_argument("--idle", type=float, required=True)
    args = p.parse_args()
    if args.what == "flags":
        return write_or_check(args.out, flags_text(), header, args.check)
    if args.what == "serve":
        return serve(args.socket, args.idle, check_one, version)
    results = check_one(json.load(sys.stdin)["launches"])
    sys.stdout.write(json.dumps({"version": version(), "results": results}) + "\n")
    return 0
