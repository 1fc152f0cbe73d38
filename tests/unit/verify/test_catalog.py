"""The one table of checks (`verify.catalog`): every row verify and preflight build names a member
of it, every member is built somewhere and described, and a report still says the plain names."""

from __future__ import annotations

import ast
import json
from dataclasses import asdict

from sparkfab.verify.catalog import CHECKS, Check
from sparkfab.verify.result import FAIL, Result
from tests.conftest import REPO

VERIFY = REPO / "fabric" / "sparkfab" / "verify"


def _names_given() -> list[tuple[str, ast.expr]]:
    """Each check name a row is built with in verify/: `Result(check=...)`, and the first argument
    of `Result.compare` / `Result.skip`."""
    out = []
    for f in sorted(VERIFY.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id == "Result":
                out += [(f"{f.name}:{node.lineno}", k.value) for k in node.keywords if k.arg == "check"]
            elif (
                isinstance(fn, ast.Attribute)
                and fn.attr in ("compare", "skip")
                and node.args
                and isinstance(fn.value, ast.Name)
                and fn.value.id == "Result"
            ):
                out.append((f"{f.name}:{node.lineno}", node.args[0]))
    return out


def test_every_row_names_a_member_of_the_table():
    given = _names_given()
    assert len(given) > 60, "the scan found the rows"
    free = [
        where
        for where, expr in given
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "Check")
        and not (isinstance(expr, ast.Name) and expr.id == "check")  # Result's own classmethods pass theirs on
    ]
    assert free == [], f"a check named by a free string or expression: {free}"


def test_every_member_is_built_somewhere_and_described():
    used = {expr.attr for _, expr in _names_given() if isinstance(expr, ast.Attribute)}
    assert used == {c.name for c in Check}, {c.name for c in Check} ^ used
    assert set(CHECKS) == set(Check)
    assert all(
        a.subject and a.reads and a.verb in ("verify", "preflight", "verify, preflight") for a in CHECKS.values()
    )


def test_a_report_says_the_plain_names():
    row = Result(check=Check.FORWARD_POLICY, host="a", subject="i", expected="-", actual="-", status=FAIL)
    assert json.loads(json.dumps(asdict(row)))["check"] == "forward-policy"
    assert row.check == "forward-policy" and f"{row.check}" == "forward-policy"
