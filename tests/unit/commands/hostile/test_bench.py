"""Hostile and careless input to `sparkfab bench`: the cases (the table's parts: table.py; how each
runs: runner.py)."""

from __future__ import annotations

import os

import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.bench import run_dir_files
from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import PLAN, bench, bomb, c

CASES = [
    bench("bench-rounds-zero", "--rounds 0", 2, r"--rounds"),
    bench("bench-rounds-negative", "--rounds=-1", 2, r"--rounds"),
    bench("bench-warmup-negative", "--warmup=-1", 2, r"--warmup"),
    bench("bench-output-tokens-zero", "--output-tokens 0", 2, r"--output-tokens"),
    bench("bench-output-tokens-huge", "--output-tokens 100000000", 2, r"--output-tokens"),
    bench("bench-timeout-zero", "--timeout 0", 2, r"--timeout"),
    bench("bench-timeout-nan", "--timeout nan", 2, r"--timeout"),
    bench("bench-idle-negative", "--idle-seconds=-1", 2, r"--idle-seconds"),
    bench("bench-plan-unknown", "--plan P9", 2, r"P9"),
    bench("bench-plan-file-garbage", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": "{nope"}),
    bench("bench-plan-file-mapping", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": "a: 1\n"}),
    bench("bench-plan-no-name", "--plan {d}/p.yml", 2, r"p\.yml.*name", files={"p.yml": "- {prompt_tokens: 5}\n"}),
    bench(
        "bench-plan-absurd-prompt",
        "--plan {d}/p.yml",
        2,
        r"prompt_tokens",
        files={"p.yml": "- {name: x, prompt_tokens: 1000000000000}\n"},
    ),
    bench(
        "bench-plan-zero-prompt",
        "--plan {d}/p.yml",
        2,
        r"prompt_tokens",
        files={"p.yml": "- {name: x, prompt_tokens: 0}\n"},
    ),
    bench(
        "bench-plan-requests-huge",
        "--plan {d}/p.yml",
        2,
        r"requests",
        files={"p.yml": "- {name: x, prompt_tokens: 5, requests: 100000}\n"},
    ),
    bench(
        "bench-plan-string-tokens",
        "--plan {d}/p.yml",
        2,
        r"prompt_tokens",
        files={"p.yml": "- {name: x, prompt_tokens: many}\n"},
    ),
    bench("bench-plan-empty", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": "[]\n"}),
    bench("bench-plan-bomb", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": bomb()}),
    bench("bench-url-word", "--url nope", 2, r"--url", server=None),
    bench("bench-url-ftp", "--url ftp://127.0.0.1/", 2, r"--url", server=None),
    bench("bench-url-no-host", "--url http://", 2, r"--url", server=None),
    bench("bench-url-bad-port", "--url http://127.0.0.1:99999", 2, r"--url", server=None),
    bench(
        "bench-existing-run",
        "--plan {d}/p.yml",
        2,
        r"run.*(already|holds)",
        files={"p.yml": PLAN, "run/requests.jsonl": "{}\n"},
    ),
    bench("bench-run-is-file", "--plan {d}/p.yml", 2, r"run", files={"p.yml": PLAN, "run": "x"}),
    bench(
        "bench-counters-missing",
        "--plan {d}/p.yml --counters nosuchdev --source netdev --root {d}",
        2,
        r"nosuchdev",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-counters-traversal",
        "--plan {d}/p.yml --counters ../../etc --source netdev",
        2,
        r"\.\./\.\./etc",
        files={"p.yml": PLAN},
    ),
    bench("bench-closed-port", "--plan {d}/p.yml", 5, r"cannot reach", server="closed", files={"p.yml": PLAN}),
    bench("bench-lab-no-inventory", "--plan {d}/p.yml --lab", 2, r"--lab needs --inventory", files={"p.yml": PLAN}),
    bench(
        "bench-instance-no-inventory",
        "--plan {d}/p.yml --instance a",
        2,
        r"--instance needs --inventory",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-instance-unknown",
        "--plan {d}/p.yml --inventory {d}/i.yml --instance glm-c",
        2,
        r"--instance glm-c: sw16 has the instance\(s\) glm-a, glm-b",
        files={"p.yml": PLAN, "i.yml": (REPO / "inventory/switch16-crs804-100.yml").read_text()},
    ),
    bench("bench-link-speed-bogus", "--plan {d}/p.yml --link-speed 400", 2, r"--link-speed", files={"p.yml": PLAN}),
    bench(
        "bench-link-speed-and-inventory",
        "--plan {d}/p.yml --inventory {d}/i.yml --link-speed 100e",
        2,
        r"--link-speed: with --inventory the speed measured is the inventory's speed now",
        files={"p.yml": PLAN, "i.yml": (REPO / "inventory/pair-1cable.yml").read_text()},
    ),
    bench(
        "bench-counters-host-no-inventory",
        "--plan {d}/p.yml --counters-host spark-a",
        2,
        r"--counters-host takes the devices from --inventory",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-counters-host-unknown",
        "--plan {d}/p.yml --inventory {d}/i.yml --counters-host spark-z --source netdev",
        2,
        r"spark-z is not a host of .*i\.yml",
        files={"p.yml": PLAN, "i.yml": (REPO / "inventory/pair-1cable.yml").read_text()},
    ),
    bench(
        "bench-silent-server",
        "--plan {d}/p.yml --timeout 0.5",
        5,
        r"(no answer|timed out|Timeout)",
        server="silent",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-garbage-server",
        "--plan {d}/p.yml --timeout 3",
        5,
        r"(HTTP|protocol|answer)",
        server="garbage",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-bad-chunk",
        "--plan {d}/p.yml --rounds 3",
        5,
        r"1 of 3 requests failed",
        server="bad-chunk",
        files={"p.yml": PLAN},
        outputs=("run",),
        seconds=20,
    ),
    bench(
        "bench-stalled-stream",
        "--plan {d}/p.yml --rounds 2 --idle-timeout 0.5",
        5,
        r"of 2 requests failed",
        server="stall",
        files={"p.yml": PLAN},
        outputs=("run",),
        seconds=20,
    ),
    bench("bench-ok", "--plan {d}/p.yml", 0, r"results in", files={"p.yml": PLAN}, outputs=("run",), seconds=20),
    bench(
        "bench-trickle-version",
        "--timeout 5 --plan P1",
        0,
        r"",
        server="trickle-version",
        seconds=25,
        outputs=("run",),
        slow=True,
    ),
    bench(
        "bench-trickle-metrics",
        "--timeout 5 --plan P1",
        0,
        r"",
        server="trickle-metrics",
        seconds=25,
        outputs=("run",),
        slow=True,
    ),
    bench("bench-gzip-metrics", "--timeout 5 --plan P1", 0, r"", server="gzip-metrics", seconds=20, outputs=("run",)),
    c("bench-url-query", "bench --url http://127.0.0.1:1/?x=1 --model m -o {d}/run", 2, r"without a query"),
    c("bench-url-fragment", "bench --url http://127.0.0.1:1/#x --model m -o {d}/run", 2, r"without a query"),
    bench("bench-key-unicode", "--api-key-env KEY", 2, r"--api-key-env KEY: .*header", env={"KEY": "ключ"}),
    bench("bench-key-newline", "--api-key-env KEY", 2, r"--api-key-env KEY", env={"KEY": "a\nb"}),
    bench(
        "bench-cafile-garbage", "--ca-file {d}/ca.pem", 2, r"--ca-file .*ca\.pem: not a PEM", files={"ca.pem": "nope"}
    ),
    bench("bench-idle-below-zero", "--idle-below 0 --counters lo --source netdev", 2, r"--idle-below"),
    # a resumed run whose server.json is not bench's is refused before a request is sent
    # server answers nested too deep for Python's parser: the server's fault (5) or ignored
    bench("bench-deep-version", "--plan P1", 0, r"", server="deep-version", outputs=("run",)),
    bench("bench-huge-version", "--plan P1", 0, r"", server="huge-version", outputs=("run",)),
    # (the double counts 8 tokens for any text: no exact text prompts, the server is at fault)
    bench("bench-deep-tokenize", "--plan P1", 5, r"token counts cannot be used", server="deep-tokenize"),
    bench("bench-deep-sse", "--plan P1", 5, r"malformed chunk", server="deep-sse", outputs=("run",)),
    bench("bench-server-counts-wrong", "--plan P1", 5, r"token counts cannot be used", server="huge-count"),
    c("bench-model-empty", ("bench", "--url", "{url}", "--model", "", "-o", "{d}/run"), 2, r"--model", server="good"),
    bench(
        "bench-plan-name-newline",
        "--plan {d}/p.yml",
        2,
        r"name 'P1\\n'",
        files={"p.yml": yaml.safe_dump([{"name": "P1\n", "requests": 1, "prompt_tokens": 20}])},
    ),
    bench(
        "bench-plan-too-many-tokens",
        "--plan {d}/p.yml",
        2,
        r"more than 16,777,216 tokens",
        files={"p.yml": "- {name: big, requests: 256, prompt_tokens: 2097152, output_tokens: 1}\n"},
    ),
    bench(
        "bench-resume-server-garbage",
        "--resume --plan P1",
        2,
        r"server\.json: not JSON",
        files={**run_dir_files("run"), "run/server.json": "{garb"},
        outputs=("run/.bench.lock",),
    ),
    bench(
        "bench-resume-server-list",
        "--resume --plan P1",
        2,
        r"server\.json: not the mapping",
        files={**run_dir_files("run"), "run/server.json": "[]"},
        outputs=("run/.bench.lock",),
    ),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs (root)")
def test_a_disk_that_fills_during_bench_names_the_run(tmp_path, capsys, server):
    """requests.jsonl fills a 64 KiB tmpfs mid-run: exit 5 with the run directory, not a bare
    'No space left on device'."""
    import subprocess

    from sparkfab.cli import main

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "fill").write_bytes(b"x" * (60 << 10))
        url = server("good")
        argv = f"bench --url {url} --model m --plan P1 --rounds 4 --warmup 0 --idle-seconds 0 --output-tokens 200"
        code = main([*argv.split(), "-o", str(mnt / "run")])
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    err = capsys.readouterr().err
    assert code == 5, err[-1500:]
    assert f"-o {mnt / 'run'}" in err and "No space left on device" in err, err[-1500:]
