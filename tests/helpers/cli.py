"""The one in-process runner of the `sparkfab` CLI used by every test (fixture `cli` in
conftest; lab tests and benchmarks call it directly)."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run(*args: str) -> CliResult:
    """`sparkfab ARGS` from the repository root: exit code, stdout and stderr."""
    from sparkfab.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse refused the arguments (or --help, --version)
                code = int(exc.code or 0)
    finally:
        os.chdir(cwd)
    return CliResult(code, out.getvalue(), err.getvalue())
