"""A bench run's directory (`measure.rundir`): the layout its docstring documents is what a real
bench writes, and each file is read back by its one rule."""

from __future__ import annotations

import json
import re

import pytest

from sparkfab.errors import UsageError
from sparkfab.files.userfile import BadFile
from sparkfab.lock import Busy
from sparkfab.measure.bench import rundir
from sparkfab.measure.bench.rundir import RunDir
from tests.helpers.bench import bench, plan, run_dir_files


def _documented() -> set[str]:
    """The names the module's docstring lays out (`<test>` and `<round>` as patterns)."""
    names = re.findall(r"^      (\S+)", rundir.__doc__ or "", flags=re.M)
    return {n.replace("<test>", "*").replace("<round>", "*") for n in names}


def _written(root) -> set[str]:
    out = set()
    for p in root.rglob("*"):
        if p.is_file():
            name = str(p.relative_to(root))
            name = re.sub(r"^result_.*\.json$", "result_*.json", name)
            name = re.sub(r"^traffic/.*-r.*\.smp$", "traffic/*-r*.smp", name)
            out.add(name)
    return out


def test_the_layout_documented_is_what_a_bench_with_counters_writes(double, cli, tmp_path):
    from tests.doubles.sysfs import fake_tree

    fake_tree(tmp_path / "sys", ["rocep1s0f1"])
    url = double("--prefill-s-per-token", "1e-4", "--token-interval-s", "0.002")
    p = plan(tmp_path, [{"name": "x", "requests": 2, "prompt_tokens": 300, "output_tokens": 20}])
    counters = ("--counters", "rocep1s0f1", "--root", str(tmp_path / "sys"), "--idle-seconds", "0.2")
    res = bench(cli, url, p, "--rounds", "1", "--warmup", "0", *counters, "-o", str(tmp_path / "run"))
    assert res.code == 0, res.err
    written = _written(tmp_path / "run")
    # a double has no checkpoint for model-config.json to copy; everything else is there
    assert written == _documented() - {"model-config.json"}, (written, _documented())
    run = RunDir(tmp_path / "run")
    assert run.holds_a_run() and run.written() == sorted(p.name for p in run.path.iterdir() if p.name != RunDir.LOCK)
    assert run.meta()["rounds"] == 1 and set(run.server()) == {"x"}
    rows = run.requests()
    assert [r["traffic_file"] for r in rows] == ["x-r0.smp", "x-r0.smp"]
    assert run.sample_file(rows[0]["traffic_file"]).stat().st_size > 0


def test_requests_skips_and_counts_a_torn_line_and_folds_traffic_in(tmp_path):
    for name, text in run_dir_files("run").items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    run = RunDir(tmp_path / "run")
    run.append({"kind": "traffic", "test": "P1", "round": 0, "index": 0, "traffic_file": "P1-r0.smp",
                "prefill_bytes": 4096})  # fmt: skip
    with (tmp_path / "run/requests.jsonl").open("a") as f:
        f.write('{"test": "P1", "round": 1, "ind')  # a killed bench's last half line
    lines, skipped = run.lines()
    assert (len(lines), skipped) == (2, 1)
    (row,) = run.requests()
    assert row["prefill_bytes"] == 4096 and row["traffic_file"] == "P1-r0.smp"
    run.keep_only(lines[:1])
    assert run.lines() == (lines[:1], 0)


def test_server_json_is_read_by_one_rule(tmp_path):
    run = RunDir(tmp_path)
    assert run.server() == {}
    run.write_server("a", {"server_mean_ttft_ms": 1.0})
    run.write_server("b", {})
    assert run.server() == {"a": {"server_mean_ttft_ms": 1.0}, "b": {}}
    for bad in ("{garb", "[]", '{"a": 1}'):
        (tmp_path / RunDir.SERVER).write_text(bad)
        with pytest.raises(BadFile, match=r"server\.json"):
            run.server()


@pytest.mark.parametrize(
    "text,match",
    [("[]", "not a JSON object"), (b"\xff\xfe", "not UTF-8"), ('{"rounds": "three"}', "rounds is 'three'")],
)
def test_run_json_of_another_shape_is_named(tmp_path, text, match):
    path = tmp_path / RunDir.RUN
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UsageError, match=match):
        RunDir(tmp_path).meta()


def test_the_lock_is_not_a_written_file_and_a_second_holder_is_refused(tmp_path):
    run = RunDir(tmp_path)
    with run.held():
        assert (tmp_path / RunDir.LOCK).exists() and run.written() == []
        with pytest.raises(Busy), run.held():
            pass
    run.write_meta({"url": "u"})
    assert run.written() == ["run.json"] and json.loads((tmp_path / "run.json").read_text()) == {"url": "u"}
