"""The lab fills its engine's cache once, beside the boots, through the engine's oracle: the
request names the lab's model, the oracle runs with the ranks' environment as this machine sees
it, a fill that ended well is not made again, and one that fails or hangs costs nothing but the
first start's own inspection. (The real fill, vLLM's modelinfos written and found by every rank,
is the lab tier's: tests/lab/test_lab_vllm.py.)"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from sparkfab.lab import enginecache, image, serving
from sparkfab.paths import LabPaths


def _lab(tmp_path: Path, monkeypatch, oracle_body: str):
    """A lab directory with a model, the images' base under tmp, and vLLM's Python a script
    that does `oracle_body` (its argv: the asset, "check"; its stdin: the request)."""
    monkeypatch.setenv("SPARKFAB_LAB_IMAGES", str(tmp_path / "images"))
    paths = LabPaths(tmp_path / "lab")
    paths.model.mkdir(parents=True)
    (paths.model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 1024}))
    py = tmp_path / "venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n{oracle_body}\n")
    py.chmod(0o755)
    monkeypatch.setenv("SPARKFAB_VLLM_PYTHON", str(py))
    return SimpleNamespace(paths=paths), serving.of("vllm")


RECORD = (
    "req = json.load(sys.stdin)\n"
    "open(os.environ['VLLM_CACHE_ROOT'] + '.seen', 'w').write(json.dumps([sys.argv[1:], req, "
    "os.environ['TORCHINDUCTOR_CACHE_DIR'], os.environ['VLLM_TARGET_DEVICE'], os.environ['HF_HUB_OFFLINE']]))\n"
    "print(json.dumps({'version': '0', 'results': [{'ok': True, 'error': ''}]}))"
)


def test_the_oracle_gets_the_labs_model_and_the_caches_path_on_this_machine(tmp_path, monkeypatch):
    spec, engine = _lab(tmp_path, monkeypatch, RECORD)
    fill = enginecache.start(spec, engine)
    assert fill is not None
    took = enginecache.finish(fill)
    assert took is not None and took >= 0
    here = image.compile_cache()
    args, request, inductor, device, offline = json.loads((here / "vllm.seen").read_text())
    assert args[0].endswith("vllm_oracle.py") and args[1] == "check"
    model = str(spec.paths.model)
    assert request == {"launches": [{"argv": ["vllm", "serve", model], "model_dir": model}]}
    # the ranks' own settings (the lab recipe's and the lab build's), their cache under this machine's path
    assert inductor == str(here / "inductor") and (device, offline) == ("cpu", "1")
    # a fill that ended well is not made again, whatever the model's sizes (a lab at another TP size)
    (spec.paths.model / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 2048})
    )
    assert enginecache.start(spec, engine) is None
    (spec.paths.model / "config.json").write_text(json.dumps({"architectures": ["MistralForCausalLM"]}))
    assert enginecache.start(spec, engine) is not None  # another class is inspected anew


def test_a_failed_fill_is_said_with_its_log_and_tried_again_next_time(tmp_path, monkeypatch, caplog):
    spec, engine = _lab(tmp_path, monkeypatch, "sys.stdin.read(); print('ImportError: no vllm'); sys.exit(3)")
    with caplog.at_level(logging.WARNING):
        assert enginecache.finish(enginecache.start(spec, engine)) is None
    assert "exit 3" in caplog.text and "engine-cache.log" in caplog.text
    assert "no vllm" in (spec.paths.logs / "engine-cache.log").read_text()
    assert enginecache.start(spec, engine) is not None  # no stamp: the next lab fills it


def test_a_fill_past_its_wait_is_ended_with_what_it_started(tmp_path, monkeypatch, caplog):
    body = (
        "import subprocess\n"
        "sys.stdin.read()\n"
        f"child = subprocess.Popen([{sys.executable!r}, '-c', 'import time; time.sleep(60)'])\n"
        "open(os.environ['VLLM_CACHE_ROOT'] + '.child', 'w').write(str(child.pid))\n"
        "time.sleep(60)"
    )
    spec, engine = _lab(tmp_path, monkeypatch, body)
    fill = enginecache.start(spec, engine)
    child = image.compile_cache() / "vllm.child"
    deadline = time.monotonic() + 20
    while not child.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING):
        assert enginecache.finish(fill, wait_s=0.2) is None
    assert time.monotonic() - t0 < 10 and "within 0 s" in caplog.text
    assert fill is not None and fill.proc.poll() is not None
    pid = int(child.read_text())
    deadline = time.monotonic() + 5  # a SIGKILL lands when the kernel next schedules the process
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_an_engine_without_a_model_fills_nothing(tmp_path, monkeypatch):
    spec, _ = _lab(tmp_path, monkeypatch, RECORD)
    assert enginecache.start(spec, serving.of("collective")) is None
