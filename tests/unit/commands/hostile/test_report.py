"""Hostile and careless input to `sparkfab report`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import os

import pytest

from tests.helpers.bench import run_dir_files
from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import FIFO, bad_row, config, report, row

CASES = [
    report("report-missing-run", "report {d}/nope -o {d}/out", 5, r"nope"),
    report("report-not-a-run", "report {d}/x -o {d}/out", 2, r"x: not a bench run directory", files={"x/file": "x"}),
    report(
        "report-run-json-garbage", "report {d}/r -o {d}/out", 2, r"r/run\.json", files=run_dir_files("r", meta="{nope")
    ),
    report("report-run-json-list", "report {d}/r -o {d}/out", 2, r"r/run\.json", files=run_dir_files("r", meta="[1]")),
    report(
        "report-run-json-binary",
        "report {d}/r -o {d}/out",
        2,
        r"r/run\.json",
        files={"r/run.json": b"\xff\xfe", "r/requests.jsonl": ""},
    ),
    report("report-three-runs", "report {d}/a {d}/b {d}/a -o {d}/out", 2, r"one or two runs"),
    report("report-into-run", "report {d}/a -o {d}/a", 2, r"holds the input"),
    report("report-into-parent", "report {d}/a -o {d}", 2, r"holds the input"),
    report(
        "report-into-foreign",
        "report {d}/a -o {d}/out",
        2,
        r"did not write \(notes\.txt\)",
        files={"out/notes.txt": "x"},
    ),
    report(
        "report-estimate-config-missing", "report {d}/a --estimate --config {d}/nope.json -o {d}/out", 5, r"nope\.json"
    ),
    report("report-tp-zero", "report {d}/a --estimate --tp 0 -o {d}/out", 2, r"--tp"),
    report("report-empty-o", ("report", "{d}/a", "-o", ""), 2, r"-o.*empty"),
    report(
        "report-torn-last-line",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable line",
        files=run_dir_files("r", rows=[row(), row(index=1)[:40]]),
        outputs=("out",),
        seconds=30,
    ),
    report(
        "report-garbage-lines",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 3 unreadable line",
        files=run_dir_files("r", rows=["nope", row(), "[1]", '{"test": 5}']),
        outputs=("out",),
        seconds=30,
    ),
    report(
        "report-row-types",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable line",
        files=run_dir_files("r", rows=[row(), row(ttft_s="fast")]),
        outputs=("out",),
        seconds=30,
    ),
    report(
        "report-no-rows",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files=run_dir_files("r", rows=[]),
        outputs=("out",),
        seconds=30,
    ),
    report(
        "report-requests-fifo",
        "report {d}/r -o {d}/out",
        2,
        r"requests\.jsonl: is not a regular file",
        files={**run_dir_files("r"), "r/requests.jsonl": FIFO},
    ),
    report(
        "report-run-json-deep",
        "report {d}/r -o {d}/out",
        2,
        r"run\.json: JSON nested too deep",
        files=run_dir_files("r", meta="[" * 100_000 + "]" * 100_000),
    ),
    report(
        "report-label-mathtext",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files=run_dir_files(
            "r", meta={"url": "http://127.0.0.1:1", "model": "m", "label": "$\\undefined^$", "plan": []}
        ),
        outputs=("out",),
    ),
    # a record's file name stays inside the run; nested lines are skipped like torn ones
    report(
        "report-traffic-file-absolute",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable",
        files={**run_dir_files("r"), "r/requests.jsonl": bad_row(traffic_file="/etc/passwd")},
        outputs=("out",),
    ),
    report(
        "report-traffic-file-number",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable",
        files={**run_dir_files("r"), "r/requests.jsonl": bad_row(traffic_file=5)},
        outputs=("out",),
    ),
    report(
        "report-line-deep",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable",
        files={**run_dir_files("r"), "r/requests.jsonl": row() + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"},
        outputs=("out",),
    ),
    report(
        "report-model-and-config",
        "report {d}/a --estimate --model glm-5.3 --config {d}/c.json -o {d}/out",
        2,
        r"--model and --config",
        files={"c.json": config()},
    ),
    report(
        "report-tp-heads",
        "report {d}/a --estimate --model glm-5.3 --tp 7 -o {d}/out",
        2,
        r"TP 7 does not divide the 64 attention heads",
    ),
    report("report-model-without-estimate", "report {d}/a --model glm-5.3 -o {d}/out", 2, r"for --estimate"),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)


@pytest.mark.parametrize(
    "env",
    [
        {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"},
        {"PYTHONIOENCODING": "ascii"},
    ],
    ids=["c-locale", "ascii-stdio"],
)
def test_report_of_a_label_beyond_ascii_in_a_locale_without_utf8(tmp_path, env):
    """The locale is the process's own (set at its start): a child with it, as a user runs it."""
    import subprocess
    import sys

    meta = {"url": "http://127.0.0.1:1", "model": "m", "label": "200-\u00fcn\u00ef", "plan": []}
    for rel, content in run_dir_files("r", meta=meta).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content, encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENC"))}
    res = subprocess.run(
        [sys.executable, "-m", "sparkfab", "report", "r", "-o", "out"],
        cwd=tmp_path,
        env={**base, **env},
        capture_output=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    assert "200-\u00fcn\u00ef" in (tmp_path / "out/report.md").read_text(encoding="utf-8")
    assert b"200-\\xfcn\\xef" in res.stdout or "200-\u00fcn\u00ef".encode() in res.stdout
