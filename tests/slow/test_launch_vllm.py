"""Every launch command meets vLLM's own argument parser, as the container runs it.

For every vLLM recipe x example inventory x link speed, the rendered `docker run` line is read
back the way docker reads it (options, image, arguments), the image's entrypoint is applied,
and the argv the container executes is parsed by the parser of `vllm serve` from the vLLM in
.venv-vllm (scripts/setup.sh installs it; fabric/sparkfab/assets/vllm_oracle.py is the bridge, the
same one `sparkfab validate` runs).
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparkfab.engines import ENGINES
from sparkfab.engines.recipes import recipes
from sparkfab.errors import InventoryError
from sparkfab.render.tree import render
from sparkfab.resolve import load_plan
from tests.conftest import EXAMPLES, REPO

VLLM_PY = Path(os.environ.get("SPARKFAB_VLLM_PYTHON") or REPO / ".venv-vllm/bin/python")
VLLM_RECIPES = sorted(n for n, r in recipes().items() if r.engine == "vllm")


def vllm_parse(argvs: list[list[str]]) -> list[dict]:
    if not VLLM_PY.exists():
        pytest.skip("no vLLM environment (.venv-vllm, made by scripts/setup.sh)")
    res = subprocess.run(
        [str(VLLM_PY), str(REPO / "fabric/sparkfab/assets/vllm_oracle.py"), "check"],
        input=json.dumps({"launches": [{"argv": a, "model_dir": None} for a in argvs]}),
        capture_output=True,
        text=True,
        env={**os.environ, "VLLM_TARGET_DEVICE": "cpu"},
        timeout=600,
        check=True,
    )
    return json.loads(res.stdout.splitlines()[-1])["results"]


def executed(script: str, image: str, entrypoint: list[str]) -> list[str]:
    """The argv a container runs, read from a rendered launch script as docker reads it."""
    line = script.split("exec docker run", 1)[1].replace("\\\n", " ")
    words = shlex.split(line.splitlines()[0])
    at = words.index(image)
    options, args = words[:at], words[at + 1 :]
    if "--entrypoint" in options:
        return [options[options.index("--entrypoint") + 1], *args]
    return [*entrypoint, *args]


def serve_part(argv: list[str]) -> list[str] | None:
    """The `vllm serve ...` a container runs (inside Ray's `bash -c` on the head), or None."""
    if argv[:2] == ["vllm", "serve"]:
        return argv
    if argv[:2] == ["bash", "-c"] and "&& exec vllm serve " in argv[2]:
        return shlex.split(argv[2].split("&& exec ", 1)[1])
    return None  # a Ray worker: it waits for the head, then `ray start --block`


def _with_recipe(path: Path, name: str, tmp: Path) -> Path:
    data = yaml.safe_load(path.read_text())
    for inst in (data["all"]["vars"]["sparkfab"].get("instances") or {}).values():
        inst["launcher"] = name
    out = tmp / f"{path.stem}-{name}.yml"
    out.write_text(yaml.safe_dump(data))
    return out


def _launches(tmp_path: Path) -> list[tuple[str, list[str], dict]]:
    """(label, container argv, launch json) for every rank of every combination."""
    out = []
    for path in EXAMPLES:
        for name in VLLM_RECIPES:
            rec = recipes()[name]
            inv = _with_recipe(path, name, tmp_path)
            try:
                base = load_plan(str(inv))
            except InventoryError as exc:
                # a Gloo engine on a switchless ring of 3+ without a fabric control plane, a
                # checkpoint whose heads do not divide into the ring's TP size (Llama's 64 at TP 3),
                # or Ray where each rank needs NCCL values of its own (a switchless topology)
                gloo_ring = rec.tp_backend == "gloo" and "has no subnet they all share" in str(exc)
                ray_ring = rec.backend == "ray" and "backend ray copies rank 0's NCCL_* variables" in str(exc)
                refused_tp = "choose a TP size the checkpoint divides into" in str(exc)
                assert gloo_ring or ray_ring or refused_tp, (path, name, exc)
                continue
            speeds = ["200", "100e"] if base.link_speed != "100" else ["100"]
            for speed in speeds:
                tree = render(load_plan(str(inv), speed), {})
                for host, files in tree.hosts.items():
                    by_path = {f.path: f.content for f in files}
                    for p, content in by_path.items():
                        if p.endswith(".json") and "/launch/" in p:
                            meta = json.loads(content)
                            script = by_path[p.replace(".json", ".sh")]
                            argv = executed(script, rec.image, rec.entrypoint)
                            out.append((f"{path.stem}/{name}/{speed}/{host}", argv, meta))
    return out


def test_every_launch_parses_with_vllms_own_parser(tmp_path):
    launches = _launches(tmp_path)
    assert len({label.split("/")[1] for label, _, _ in launches}) == len(VLLM_RECIPES)
    for label, argv, meta in launches:
        assert argv == meta["argv"], f"{label}: the container would run {argv[:4]}, the plan says {meta['argv'][:4]}"
    serve = [(label, s) for label, argv, _ in launches if (s := serve_part(argv)) is not None]
    assert len(serve) > 50
    results = vllm_parse([s for _, s in serve])
    bad = [(label, r["error"]) for (label, _), r in zip(serve, results, strict=True) if not r["ok"]]
    assert not bad, bad[:5]


def test_the_old_entrypoint_bug_is_what_the_parser_catches():
    """vllm/vllm-openai's ENTRYPOINT is `vllm serve`: appending `vllm serve MODEL` runs it twice."""
    rec = recipes()["glm-5.3-flash-ring4"]
    assert rec.entrypoint == ["vllm", "serve"]
    [result] = vllm_parse([[*rec.entrypoint, "vllm", "serve", rec.model, "--tensor-parallel-size", "4"]])
    assert not result["ok"] and "unrecognized arguments: serve" in result["error"]


def test_entrypoint_is_replaced_when_the_command_is_not_the_images(tmp_path):
    """With Ray the head container runs bash, not the image's `vllm serve` entrypoint."""
    from sparkfab.render.launch import container_command

    rec = recipes()["glm-5.3-flash-ring4"]
    assert container_command(rec, ["vllm", "serve", "m"]) == ([], ["m"])
    assert container_command(rec, ["bash", "-c", "x"]) == (["--entrypoint", "bash"], ["-c", "x"])
    ngc = recipes()["llama-3.3-70b-tp2"]
    assert container_command(ngc, ["vllm", "serve", "m"]) == ([], ["vllm", "serve", "m"])


@pytest.mark.parametrize("name", VLLM_RECIPES)
def test_recipes_pin_their_image_and_name_their_model(name):
    rec = recipes()[name]
    assert not rec.image.endswith(":latest")
    assert rec.build or ":" in rec.image.rsplit("/", 1)[-1] or "@sha256:" in rec.image
    assert rec.model.startswith("/") or rec.model.count("/") == 1


def test_a_recipe_with_latest_or_no_org_is_refused(tmp_path, monkeypatch):
    from sparkfab.engines import recipes
    from sparkfab.errors import RenderError

    (tmp_path / "launchers").mkdir()
    for table in ("vllm-serve-flags.txt", "sglang-serve-flags.txt"):
        (tmp_path / "launchers" / table).write_text((REPO / "launchers" / table).read_text())
    (tmp_path / "launchers/bad.yml").write_text("description: x\nimage: vllm/vllm-openai:latest\nmodel: org/m\n")
    monkeypatch.setenv("SPARKFAB_HOME", str(tmp_path))
    recipes.recipes.cache_clear()
    try:
        with pytest.raises(RenderError, match=r"bad\.yml: .*pin a tag or digest"):
            recipes.recipes()
        (tmp_path / "launchers/bad.yml").write_text("description: x\nimage: vllm/vllm-openai:v1\nmodel: GLM\n")
        recipes.recipes.cache_clear()
        with pytest.raises(RenderError, match=r"model 'GLM': a Hugging Face id"):
            recipes.recipes()
    finally:
        recipes.recipes.cache_clear()


def test_instance_model_and_cache_reach_the_container(tmp_path, cli):
    data = yaml.safe_load((REPO / "inventory/ring4.yml").read_text())
    inst = data["all"]["vars"]["sparkfab"]["instances"]["glm"]
    inst.update(model="someorg/GLM-5.3-Flash-NVFP4", hf_cache="/home/ops/.cache/huggingface", secrets=["WANDB_KEY"])
    inv = tmp_path / "inv.yml"
    inv.write_text(yaml.safe_dump(data))
    assert cli("render", str(inv), "-o", str(tmp_path / "out")).code == 0
    script = (tmp_path / "out/spark-329f/etc/sparkfab/launch/glm.sh").read_text()
    assert "-v /home/ops/.cache/huggingface:/root/.cache/huggingface" in script
    assert "/root/.cache/huggingface:/root/.cache/huggingface" not in script
    assert "-e HF_TOKEN -e VLLM_API_KEY -e WANDB_KEY" in script
    argv = json.loads((tmp_path / "out/spark-329f/etc/sparkfab/launch/glm.json").read_text())["argv"]
    assert argv[:3] == ["vllm", "serve", "someorg/GLM-5.3-Flash-NVFP4"]


def test_no_rendered_file_readable_by_others_holds_a_secret(tmp_path, cli, monkeypatch):
    """Secrets are passed by name: with tokens in the environment, no rendered file carries one;
    the launch script reads them at start from the root-only file apply writes."""
    token, key = "hf_SECRETtoken1234567890", "sk-SECRETkey0987654321"
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("VLLM_API_KEY", key)
    for path in EXAMPLES:
        out = tmp_path / path.stem
        assert cli("render", str(path), "-o", str(out)).code == 0
        for f in out.rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                assert token.encode() not in data and key.encode() not in data, f
                if f.suffix == ".sh" and "/launch/" in str(f):
                    text = data.decode()
                    assert "-e HF_TOKEN" in text and "/etc/sparkfab/secrets.env" in text, f
    assert ENGINES["vllm"].secrets == ("HF_TOKEN", "VLLM_API_KEY")


def test_the_launch_script_hands_secrets_to_docker_by_name(tmp_path, cli):
    """Run a rendered docker launch script against a stand-in docker: the secret arrives in
    docker's environment (where `-e NAME` takes it from) and never on its command line."""
    assert cli("render", str(REPO / "inventory/ring4.yml"), "-o", str(tmp_path / "out")).code == 0
    root = tmp_path / "out/spark-329f"
    (root / "etc/sparkfab/secrets.env").write_text("HF_TOKEN=hf_from_file $(touch canary)\n")
    os.chmod(root / "etc/sparkfab/secrets.env", 0o600)
    script = (root / "etc/sparkfab/launch/glm.sh").read_text().replace("/etc/sparkfab", str(root / "etc/sparkfab"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "print(json.dumps({'argv': sys.argv[1:], 'HF_TOKEN': os.environ.get('HF_TOKEN')}))\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    run = subprocess.run(
        ["sh", "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.splitlines()[-1])
    assert got["HF_TOKEN"] == "hf_from_file $(touch canary)"
    assert not any("hf_from_file" in a for a in got["argv"]) and not (tmp_path / "canary").exists()
    assert got["argv"][got["argv"].index("-e") + 1] == "HF_TOKEN"


def test_ray_head_starts_first(tmp_path):
    plan = load_plan(str(REPO / "inventory/switch8-crs804-200.yml"))
    inst = plan.instances[0]
    rec = recipes()[inst.launcher]
    assert rec.backend == "ray"
    from sparkfab.render.launch import launch

    waves = {r.rank: launch(plan, inst, plan.host(r.host), rec).start_order for r in inst.ranks}
    assert waves == {r: 0 if r == 0 else 1 for r in waves}  # the head alone, then every worker
    ring = load_plan(str(REPO / "inventory/ring4.yml"))  # vLLM's own multi-node mode: rank 0 last
    ri = ring.instances[0]
    assert launch(ring, ri, ring.host(ri.ranks[0].host), recipes()[ri.launcher]).start_order == 1


def test_every_rank_of_an_instance_has_the_same_engine_hash(tmp_path):
    """verify compares the hash of the engine-shaping flags across ranks: what differs by design
    (`--node-rank N`, the value-less `--headless`) is left out, and nothing else is. A switch
    taken for a flag with a value once dropped the `--host` after `--headless` on every worker."""

    hashes: dict[str, set[str]] = {}
    for label, _, meta in _launches(tmp_path):
        combo = label.rsplit("/", 1)[0] + "/" + meta["instance"]
        hashes.setdefault(combo, set()).add(meta["engine_flag_hash"])
    assert hashes and all(len(h) == 1 for h in hashes.values()), {k: v for k, v in hashes.items() if len(v) > 1}
    argv = ["vllm", "serve", "m", "--node-rank", "1", "--headless", "--host", "0.0.0.0"]
    assert ENGINES["vllm"].engine_flags(argv) == ("vllm", "serve", "m", "--host", "0.0.0.0")
