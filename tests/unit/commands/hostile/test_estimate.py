"""Hostile and careless input to `sparkfab estimate`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO
from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import FIFO, c, config, validate

CASES = [
    validate("estimate-bad-inventory", b"\xfe", r"not UTF-8", verb="estimate --inventory {inv}"),
    c("estimate-tp-0", "estimate --tp 0", 2, r"--tp"),
    c("estimate-tp-negative", "estimate --tp -3", 2, r"--tp"),
    c("estimate-tp-huge", "estimate --tp 100000", 2, r"--tp"),
    c("estimate-chunk-0", "estimate --chunk 0", 2, r"--chunk"),
    c("estimate-from-nan", "estimate --from nan", 2, r"--from"),
    c("estimate-from-negative", "estimate --from -200", 2, r"--from"),
    c("estimate-to-zero", "estimate --to 0", 2, r"--to"),
    c("estimate-to-inf", "estimate --to inf", 2, r"--to"),
    c("estimate-to-faster", "estimate --from 100 --to 200", 2, r"--to"),
    c("estimate-ttft-nan", "estimate --ttft nan", 2, r"--ttft"),
    c("estimate-ttft-negative", "estimate --ttft -1", 2, r"--ttft"),
    c("estimate-ttft-prompt-0", "estimate --ttft 1 --ttft-prompt 0", 2, r"--ttft-prompt"),
    c("estimate-active-negative", "estimate --active-params -1", 2, r"--active-params"),
    c("estimate-bits-zero", "estimate --bits-per-weight 0", 2, r"--bits-per-weight"),
    c("estimate-mtp-negative", "estimate --mtp-tokens -2", 2, r"--mtp-tokens"),
    c("estimate-lab-no-inventory", "estimate --lab", 2, r"--lab needs --inventory"),
    c(
        "estimate-lab-not-up",
        "estimate --lab --inventory {d}/i.yml",
        2,
        r"no lab model at .*lab up",
        files={"i.yml": (REPO / "inventory/pair-2cables.yml").read_text()},
    ),
    c("estimate-plan-unknown", "estimate --plan L7", 2, r"unknown test\(s\) L7"),
    c("estimate-tp-word", "estimate --tp eight", 2, r"--tp"),
    c("estimate-model-unknown", "estimate --model glm-9000", 2, r"glm-9000"),
    c("estimate-config-missing", "estimate --config {d}/nope.json", 5, r"nope\.json"),
    c("estimate-config-dir", "estimate --config {d}", 2, r"is a directory"),
    c("estimate-config-not-json", "estimate --config {d}/c.json", 2, r"c\.json: not JSON", files={"c.json": "{nope"}),
    c("estimate-config-list", "estimate --config {d}/c.json", 2, r"c\.json.*object", files={"c.json": "[1, 2]"}),
    c(
        "estimate-config-binary",
        "estimate --config {d}/c.json",
        2,
        r"c\.json.*UTF-8",
        files={"c.json": b"\xff\xd8\xff"},
    ),
    c(
        "estimate-config-hidden-zero",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size=0)},
    ),
    c(
        "estimate-config-hidden-negative",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size=-4096)},
    ),
    c(
        "estimate-config-hidden-bool",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size=True)},
    ),
    c(
        "estimate-config-hidden-string",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size="4096")},
    ),
    c(
        "estimate-config-layers-huge",
        "estimate --config {d}/c.json",
        2,
        r"num_hidden_layers",
        files={"c.json": config(num_hidden_layers=10**30)},
    ),
    c(
        "estimate-config-heads-zero",
        "estimate --config {d}/c.json",
        2,
        r"num_attention_heads",
        files={"c.json": config(num_attention_heads=0)},
    ),
    c(
        "estimate-config-text-config-list",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": json.dumps({"text_config": [1]})},
    ),
    c(
        "estimate-config-vocab-string",
        "estimate --config {d}/c.json",
        2,
        r"vocab_size",
        files={"c.json": config(vocab_size="many")},
    ),
    c(
        "estimate-config-mtp-string",
        "estimate --config {d}/c.json",
        2,
        r"num_nextn_predict_layers",
        files={"c.json": config(num_nextn_predict_layers="x")},
    ),
    c(
        "estimate-config-nan",
        "estimate --config {d}/c.json",
        2,
        r"c\.json",
        files={"c.json": '{"hidden_size": NaN, "num_hidden_layers": 2, "num_attention_heads": 2}'},
    ),
    c(
        "estimate-config-huge-file",
        "estimate --config {d}/c.json",
        2,
        r"larger than",
        files={"c.json": " " * (9 * 1024 * 1024)},
    ),
    c("estimate-plot-into-file", "estimate --plot {d}/f", 2, r"exists and is not a directory", files={"f": "x"}),
    c(
        "estimate-plot-foreign-dir",
        "estimate --plot {d}/p",
        2,
        r"did not write \(mine\.png\)",
        files={"p/mine.png": "x"},
    ),
    c("estimate-inventory-missing", "estimate --inventory {d}/nope.yml", 5, r"nope\.yml"),
    c("estimate-plot-new", "estimate --plot {d}/p", 0, r"wrote", outputs=("p",), seconds=30),
    c(
        "estimate-config-fifo",
        "estimate --config {d}/c.json",
        2,
        r"c\.json: .*not a regular file",
        files={"c.json": FIFO},
    ),
    c("estimate-plan-fifo", "estimate --plan {d}/p.yml", 2, r"p\.yml: .*not a regular file", files={"p.yml": FIFO}),
    # text is text: rich markup, mathtext and terminal escapes from names and labels
    c("estimate-model-markup", "estimate --config {d}/c.json", 0, r"", files={"c.json": config(model_type="[/bold]")}),
    c(
        "estimate-plot-mathtext",
        "estimate --config {d}/c.json --plot {d}/p",
        0,
        r"",
        files={"c.json": config(model_type="$\\undefinedcmd$")},
        outputs=("p",),
    ),
    # numbers where they enter: a link speed, a name
    c("estimate-to-tiny", "estimate --to 1e-300 --format json", 2, r"--to"),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
