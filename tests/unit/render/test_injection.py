"""Values from the inventory reach shell files as text, never as code; outputs never
replace inputs and a re-render leaves exactly one tree.

The launch script and the verify command read env files the way `docker --env-file` does
(KEY=VALUE, literally). These tests render an inventory full of hostile env values, then run
every rendered launch script with `sh` against a copy of the tree, with the engine replaced
by a program that prints what it received.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

HOSTILE = {
    "SUBSHELL": "$(touch {canary})",
    "BACKTICK": "`touch {canary}`",
    "SEMICOLON": "x; touch {canary}",
    "AMPERSAND": "x && touch {canary} &",
    "PIPE": "x | tee {canary}",
    "QUOTES": "it's \"quoted\" '$HOME'",
    "SPACES": "  two  spaces  ",
    "GLOB": "*",
    "DOLLAR": "$HOME ${PATH} $1",
    "BACKSLASH": "a\\nb\\",
    "EQUALS": "a=b=c",
    "HASH": "#not a comment",
    "EMPTY": "",
    "UNICODE": "Grüße 한국어",
}


def _inventory(tmp_path: Path, runtime: str, canary: Path) -> Path:
    data = yaml.safe_load((REPO / "inventory/ring4.yml").read_text())
    inst = data["all"]["vars"]["sparkfab"]["instances"]["glm"]
    inst["runtime"] = runtime
    inst["env"] = {k: v.replace("{canary}", str(canary)) for k, v in HOSTILE.items()}
    path = tmp_path / "inv.yml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def _fake(bin_dir: Path, name: str) -> None:
    """A stand-in engine: prints its argv and environment as JSON."""
    p = bin_dir / name
    p.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "print(json.dumps({'argv': sys.argv[1:], 'env': dict(os.environ)}))\n"
    )
    p.chmod(p.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("runtime", ["process", "docker"])
def test_hostile_env_values_stay_text(tmp_path, cli, runtime):
    canary = tmp_path / "canary"
    inv = _inventory(tmp_path, runtime, canary)
    out = tmp_path / "out"
    res = cli("render", str(inv), "-o", str(out))
    assert res.code == 0, res.err
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("vllm", "docker", "python3"):
        _fake(bin_dir, name)
    scripts = sorted(out.glob("*/etc/sparkfab/launch/*.sh"))
    assert len(scripts) == 4
    for script in scripts:
        host_root = script.parents[3]
        text = script.read_text().replace("/etc/sparkfab", str(host_root / "etc/sparkfab"))
        local = tmp_path / f"{host_root.name}.sh"
        local.write_text(text)
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
        run = subprocess.run(["sh", str(local)], capture_output=True, text=True, env=env, timeout=20)
        assert run.returncode == 0, run.stderr
        assert not canary.exists(), f"{script}: a value ran as code"
        got = json.loads(run.stdout.splitlines()[-1])
        if runtime == "process":  # the engine itself sees every value exactly
            for k, v in HOSTILE.items():
                assert got["env"][k] == v.replace("{canary}", str(canary)), k
        else:  # docker gets the env files, which hold every value on one line, literally
            env_file = got["argv"][got["argv"].index("--env-file", got["argv"].index("--env-file") + 1) + 1]
            lines = Path(env_file).read_text().splitlines()
            for k, v in HOSTILE.items():
                assert k + "=" + v.replace("{canary}", str(canary)) in lines, k


def test_env_export_loop_matches_docker_env_file_rules(tmp_path):
    """Comments and blank lines are skipped, the last line needs no newline, values keep spaces."""
    from sparkfab.render.launch import export_env

    f = tmp_path / "e.env"
    f.write_bytes(b"# comment\n\nA=1 2\nB= lead\nC=$(id)\nD=last")
    cmd = f"{export_env(str(f))}; env"
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=30)
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert (env["A"], env["B"], env["C"], env["D"]) == ("1 2", " lead", "$(id)", "last")


def _render(cli, inv: Path, out: Path) -> int:
    return cli("render", str(inv), "-o", str(out)).code


def test_rerender_replaces_the_tree_and_leaves_no_stale_file(tmp_path, cli):
    out = tmp_path / "out"
    assert _render(cli, REPO / "inventory/ring4.yml", out) == 0
    first = {p.relative_to(out) for p in out.rglob("*")}
    assert _render(cli, REPO / "inventory/pair-1cable.yml", out) == 0
    second = {p.relative_to(out) for p in out.rglob("*")}
    assert not any("spark-329f" in str(p) for p in second), "hosts of the first render are gone"
    assert first != second
    assert [p.name for p in tmp_path.iterdir()] == ["out"], "nothing left beside the output"
    manifest = json.loads((out / ".sparkfab-output").read_text())
    assert manifest["kind"] == "render"
    assert {str(p) for p in second if (out / p).is_file()} == {*manifest["files"], ".sparkfab-output"}


def test_rerender_refuses_a_tree_someone_added_to(tmp_path, cli):
    out = tmp_path / "out"
    assert _render(cli, REPO / "inventory/ring4.yml", out) == 0
    (out / "notes.txt").write_text("mine")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, out / "spark-329f" / "link")
    res = cli("render", str(REPO / "inventory/ring4.yml"), "-o", str(out))
    assert res.code == 2 and "notes.txt" in res.err and "spark-329f/link" in res.err, res.err
    assert (out / "notes.txt").read_text() == "mine" and list(outside.iterdir()) == []


def test_render_never_writes_through_a_symlinked_output(tmp_path, cli):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    res = cli("render", str(REPO / "inventory/ring4.yml"), "-o", str(tmp_path / "out"))
    assert res.code == 2 and "symbolic link" in res.err
    assert list(real.iterdir()) == []


def test_a_failed_render_leaves_the_earlier_tree(tmp_path, cli, monkeypatch):
    from sparkfab.render import writer

    out = tmp_path / "out"
    assert _render(cli, REPO / "inventory/ring4.yml", out) == 0
    before = sorted(p.read_bytes() for p in out.rglob("*") if p.is_file())

    def broken(root: Path, f):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_write", broken)
    res = cli("render", str(REPO / "inventory/ring4.yml"), "-o", str(out))
    assert res.code == 5 and "No space left" in res.err
    assert sorted(p.read_bytes() for p in out.rglob("*") if p.is_file()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_bench_resume_keeps_finished_rounds_and_reruns_the_cut_one(tmp_path, cli, double):
    url = double("--token-interval-s", "0.001")
    plan = tmp_path / "p.yml"
    plan.write_text("- {name: t, requests: 2, prompt_tokens: 30, output_tokens: 5}\n")
    run = tmp_path / "run"
    args = ["bench", "--url", url, "--model", "fake-model", "--plan", str(plan), "--warmup", "0", "--idle-seconds", "0"]
    assert cli(*args, "--rounds", "2", "-o", str(run)).code == 0
    lines = (run / "requests.jsonl").read_text().splitlines()
    assert len(lines) == 4
    # a killed bench: round 1 has one request and half a line
    (run / "requests.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:30])
    again = cli(*args, "--rounds", "2", "-o", str(run))
    assert again.code == 2 and "--resume" in again.err
    res = cli(*args, "--rounds", "2", "--resume", "-o", str(run))
    assert res.code == 0, res.err
    rows = [json.loads(x) for x in (run / "requests.jsonl").read_text().splitlines()]
    assert sorted((r["round"], r["index"]) for r in rows) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [r["send_ns"] for r in rows[:2]] == [json.loads(x)["send_ns"] for x in lines[:2]], "round 0 kept"
    other = cli(*args, "--rounds", "2", "--seed", "7", "--resume", "-o", str(run))
    assert other.code == 2 and "seed" in other.err


def test_report_replaces_its_own_output_only(tmp_path, cli):
    from tests.helpers.bench import run_dir_files

    for rel, text in run_dir_files("a").items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    out = tmp_path / "rep"
    assert cli("report", str(tmp_path / "a"), "-o", str(out)).code == 0
    assert cli("report", str(tmp_path / "a"), "-o", str(out)).code == 0, "an earlier report is replaced"
    shutil.copy(out / "report.md", out / "mine.md")
    res = cli("report", str(tmp_path / "a"), "-o", str(out))
    assert res.code == 2 and "mine.md" in res.err


def test_vault_and_unsafe_values_reach_ansible_as_written(tmp_path, cli):
    """Ansible's own tags on Ansible's own variables pass through render untouched."""
    text = (REPO / "inventory/ring4.yml").read_text()
    text = text.replace(
        "spark-329f: {ansible_host: 10.0.0.11}",
        "spark-329f:\n      ansible_host: 10.0.0.11\n      ansible_become_password: !vault |\n"
        "        $ANSIBLE_VAULT;1.1;AES256\n        6162636465\n",
    ).replace("  vars:\n", "  vars:\n    ansible_user: !unsafe 'ops{{x}}'\n", 1)
    inv = tmp_path / "inv.yml"
    inv.write_text(text)
    assert cli("render", str(inv), "-o", str(tmp_path / "out")).code == 0
    exe = Path(sys.executable).parent / "ansible-inventory"
    out = subprocess.run(
        [str(exe), "-i", str(tmp_path / "out/inventory.yml"), "--host", "spark-329f"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    host = json.loads(out)
    assert host["ansible_become_password"] == {"__ansible_vault": "$ANSIBLE_VAULT;1.1;AES256\n6162636465\n"}
    assert host["ansible_user"] == "ops{{x}}"
