"""Benchmark plans: the paper's P1-P6 (Section 7.4), the lab's L1-L4, or a YAML file.

One home for the plans: `bench` runs them, `estimate` bounds them, `report` reads them back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkfab.errors import BenchError, Unavailable
from sparkfab.files import yamlload


@dataclass(frozen=True)
class Test:
    name: str
    requests: int
    prompt_tokens: int
    output_tokens: int = 1024


#: Section 7.4 of the paper.
PLAN = (
    Test("P1", 1, 1024),
    Test("P2", 1, 8192),
    Test("P3", 1, 32768),
    Test("P4", 4, 8192),
    Test("P5", 1, 65536),
    Test("P6", 4, 16384),
)

#: The lab's plan (`--plan lab`): the paper's kinds of test at the sizes a small model on a
#: shaped lab link answers in seconds: short and long prefill, two prefills together, decode.
#: L4 decodes 32 tokens (128, then 64, until #59): 70 ms a token on two cores at TP4, and its
#: bytes per token the same from any number of steps (45.7 kB at 64 and at 128).
LAB_PLAN = (
    Test("L1", 1, 2048, 16),
    Test("L2", 1, 8192, 16),
    Test("L3", 2, 4096, 16),
    Test("L4", 1, 128, 32),
)


def warmed(tests: list[Test]) -> list[Test]:
    """The tests a bench warms up before: each whose round holds more prompt tokens than any
    test's before it (the first among them). An engine's first pass at a size pays for what it
    sets up for that size, once; a test no larger than one before it finds the engine warm. On
    the lab's engine at TP4 the warm-up of L3 and L4 (after L1 and L2) took what their measured
    rounds took; at TP8, warmed up by L1 alone, L2's first round took 4-6 % longer than the rest
    (benchmarks/results/main_job_2core.txt, lab_tp8_switch8_2core.txt)."""
    out, most = [], 0
    for t in tests:
        if t.requests * t.prompt_tokens > most:
            out.append(t)
            most = t.requests * t.prompt_tokens
    return out


#: Bounds of a plan: beyond them a request cannot be served by any Spark cluster.
MAX_PROMPT_TOKENS = 1 << 21
MAX_OUTPUT_TOKENS = 1 << 20
MAX_REQUESTS = 256
_ROW_KEYS = {"name": str, "requests": int, "prompt_tokens": int, "output_tokens": int}
#: the prompt tokens of one test together (a round's prompts are all built before it is sent)
MAX_TEST_TOKENS = 1 << 24
_ROW_BOUNDS = {"requests": MAX_REQUESTS, "prompt_tokens": MAX_PROMPT_TOKENS, "output_tokens": MAX_OUTPUT_TOKENS}


def select(spec: str | None, output_tokens: int | None = None) -> list[Test]:
    """P1-P6 (and L1-L4) by name, `lab` for L1-L4, or a YAML file of {name, requests,
    prompt_tokens, output_tokens}."""
    if spec and (Path(spec).exists() or spec.endswith((".yml", ".yaml")) or "/" in spec):
        tests = _plan_file(Path(spec))
    else:
        if spec == "lab":
            spec = ",".join(t.name for t in LAB_PLAN)
        names = [n.strip() for n in (spec or ",".join(t.name for t in PLAN)).split(",") if n.strip()]
        known = {t.name: t for t in (*PLAN, *LAB_PLAN)}
        unknown = [n for n in names if n not in known]
        if unknown or not names:
            raise BenchError(
                f"unknown test(s) {', '.join(unknown) or '(none)'}: the plans are P1-P6 and `lab` (L1-L4), "
                "or pass a YAML file"
            )
        tests = [known[n] for n in names]
    if output_tokens:
        tests = [Test(t.name, t.requests, t.prompt_tokens, output_tokens) for t in tests]
    return tests


def _plan_file(path: Path) -> list[Test]:
    try:
        rows = yamlload.parse(yamlload.read_text(path, "plan file"))
    except FileNotFoundError:
        raise Unavailable(f"--plan {path}: no such file") from None
    except yamlload.YamlProblem as exc:
        raise BenchError(f"--plan {path}{f':{exc.line}' if exc.line else ''}: {exc.message}") from None
    if not isinstance(rows, list) or not rows:
        raise BenchError(
            f"--plan {path}: a plan is a non-empty list of {{name, requests, prompt_tokens, output_tokens}}"
        )
    return [_plan_row(path, i, r) for i, r in enumerate(rows)]


def _plan_row(path: Path, i: int, row: Any) -> Test:
    where = f"--plan {path}: tests[{i}]"
    if not isinstance(row, dict):
        raise BenchError(f"{where} is not a mapping of name, requests, prompt_tokens, output_tokens")
    unknown = sorted(str(k) for k in row if k not in _ROW_KEYS)
    if unknown:
        raise BenchError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_ROW_KEYS)})")
    for key in ("name", "prompt_tokens"):
        if key not in row:
            raise BenchError(f"{where}: {key} is missing")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}", str(row["name"])):
        raise BenchError(f"{where}: name {str(row['name'])[:40]!r} is not a short name (letters, digits, _ . -)")
    values = {"requests": row.get("requests", 1), "output_tokens": row.get("output_tokens", 1024)}
    values["prompt_tokens"] = row["prompt_tokens"]
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _ROW_BOUNDS[key]:
            raise BenchError(f"{where}: {key} is {value!r}, not a whole number in 1-{_ROW_BOUNDS[key]:,}")
    if values["requests"] * values["prompt_tokens"] > MAX_TEST_TOKENS:
        raise BenchError(
            f"{where}: {values['requests']:,} requests of {values['prompt_tokens']:,} prompt tokens is more than "
            f"{MAX_TEST_TOKENS:,} tokens at once (each prompt is built before the test is sent)"
        )
    return Test(str(row["name"]), values["requests"], values["prompt_tokens"], values["output_tokens"])
