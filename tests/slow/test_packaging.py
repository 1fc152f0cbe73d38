"""Packaging: a wheel installed outside any checkout handles every example and runs a
lab cycle, because the launch recipes, roles, playbooks and ansible.cfg travel inside it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, REPO
from tests.helpers.bench import run_dir_files
from tests.helpers.lab import holding, lab_ready

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel built from this checkout, installed into a new virtual environment."""
    base = tmp_path_factory.mktemp("pkg")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    [wheel] = (base / "dist").glob("sparkfab-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
        env=_outside(),  # a sparkfab on PYTHONPATH would satisfy the requirement and skip the install
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    empty = base / "empty"
    empty.mkdir()
    return {"wheel": wheel, "bin": venv / "bin", "cwd": empty}


def _outside() -> dict[str, str]:
    """This environment without what points at the checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("SPARKFAB_HOME", "PYTHONPATH", "VIRTUAL_ENV")}


def _run(installed: dict[str, Path], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = _outside()
    env["PATH"] = f"{installed['bin']}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return subprocess.run(
        [str(installed["bin"] / "sparkfab"), *args],
        cwd=installed["cwd"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_wheel_carries_recipes_roles_playbooks_and_config(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    for want in (
        "sparkfab/_shipped/ansible.cfg",
        "sparkfab/_shipped/launchers/lab-vllm.yml",
        "sparkfab/_shipped/launchers/vllm-serve-flags.txt",
        "sparkfab/_shipped/playbooks/site.yml",
        "sparkfab/_shipped/roles/sparkfab_files/tasks/main.yml",
        "sparkfab/assets/collective.py",
        "sparkfab/templates/launch.sh.j2",
        "sparkfab/measure/counters/_sampleloop.pyi",
        "sparkfab/lab/model.py",
        "sparkfab/lab/files/sparkfab-lab-hw",
        "sparkfab/lab/files/sparkfab-lab-hw.service",
        "sparkfab/assets/vllm_oracle.py",
        "sparkfab/assets/sglang_oracle.py",
        "sparkfab/assets/oracle_cli.py",
        "sparkfab/_shipped/launchers/sglang-serve-flags.txt",
        "sparkfab/templates/report.html.j2",
        "sparkfab/assets/exporter.py",
        "sparkfab/assets/grafana-dashboard.json",
        "sparkfab/templates/exporter.service.j2",
        "sparkfab/_shipped/playbooks/exporter.yml",
        "sparkfab/_shipped/roles/sparkfab_exporter/tasks/main.yml",
    ):
        assert want in names, want
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]


def _instances(path: Path) -> list[dict]:
    return list((yaml.safe_load(path.read_text())["all"]["vars"]["sparkfab"].get("instances") or {}).values())


def test_an_installed_sparkfab_handles_every_example_from_an_empty_directory(installed):
    assert _run(installed, "--version").stdout.startswith("sparkfab ")
    for path in EXAMPLES:
        for verb in (("validate", str(path)), ("plan", str(path), "--format", "json")):
            res = _run(installed, *verb)
            assert res.returncode == 0, (path.name, verb[0], res.stderr[-800:])
        out = installed["cwd"] / f"render-{path.stem}"
        res = _run(installed, "render", str(path), "-o", str(out))
        assert res.returncode == 0, (path.name, res.stderr[-800:])
        # every instance with a launcher has its launch scripts; the triangle's has none (no
        # stock checkpoint divides into TP 3), so it renders the fabric only
        launchers = [i.get("launcher") for i in _instances(path)]
        assert any(out.glob("*/etc/sparkfab/launch/*.sh")) == any(launchers), path.name
    assert sorted(p.name for p in installed["cwd"].iterdir()) == sorted(f"render-{p.stem}" for p in EXAMPLES)


def test_the_plain_install_is_the_core_and_says_what_the_extras_add(installed, tmp_path):
    """`pip install sparkfab` without extras has no matplotlib and no pyroute2: --version says
    so, a plot asks for `sparkfab[plots]` (exit 5), report writes its tables without figures,
    and the lab asks for `sparkfab[lab]`."""
    py = str(installed["bin"] / "python")
    for module in ("matplotlib", "pyroute2"):
        probe = subprocess.run([py, "-c", f"import {module}"], capture_output=True, env=_outside(), timeout=60)
        assert probe.returncode != 0, f"{module} is in the plain install"
    version = _run(installed, "--version")
    assert "extras: plots: not installed, lab: not installed" in version.stdout, version.stdout
    plot = _run(installed, "estimate", "--plot", str(tmp_path / "plots"))
    assert plot.returncode == 5 and "pip install 'sparkfab[plots]'" in plot.stderr, plot.stderr[-800:]
    lab = _run(installed, "lab", "status", str(REPO / "inventory/pair-1cable.yml"))
    assert lab.returncode == 5 and "pip install 'sparkfab[lab]'" in lab.stderr, lab.stderr[-800:]
    for name, text in run_dir_files("run").items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    report = _run(installed, "report", str(tmp_path / "run"), "-o", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr[-800:]
    assert "report: no figures (plots need matplotlib" in report.stderr
    assert (tmp_path / "report/report.md").is_file() and not list((tmp_path / "report").glob("*.png"))


def _python312() -> str | None:
    """A Python 3.12 beside this one (pyenv's, or on PATH), where ansible-core 2.20+ installs."""
    import shutil

    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = sorted(str(p) for p in pyenv.glob("3.12*/bin/python3.12"))
    candidates += [x for x in (shutil.which("python3.12"),) if x]
    for candidate in candidates:
        probe = [candidate, "-c", "import sys, venv; assert sys.version_info[:2] == (3, 12)"]
        if subprocess.run(probe, capture_output=True, timeout=60).returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="module")
def ansible_site_312(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A Python 3.12 environment that had ansible-core 2.21 before sparkfab (with its lab extra)
    was pip-installed into it from this checkout (pip builds the wheel, with its shipped
    playbooks and roles, and installs it): its ansible-core before and after."""
    python = _python312()
    if python is None:
        pytest.skip("no Python 3.12 here")
    venv = tmp_path_factory.mktemp("py312") / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q"]
    first = subprocess.run([*pip, "ansible-core==2.21.*"], capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]

    def core() -> str:
        out = subprocess.run([str(venv / "bin/ansible"), "--version"], capture_output=True, text=True, timeout=120)
        return out.stdout.splitlines()[0]

    before = core()
    install = subprocess.run([*pip, f"{REPO}[lab]"], capture_output=True, text=True, timeout=900, env=_outside())
    assert install.returncode == 0, install.stderr[-2000:]
    return {"venv": venv, "before": before, "after": core()}


def test_an_ansible_install_on_python_312_keeps_its_ansible_core_and_the_core_verbs_work(tmp_path, ansible_site_312):
    """pip install sparkfab into a Python 3.12 environment that has ansible-core 2.21: it stays,
    the inventory child, vaults, render and Mitogen's strategy work with it."""
    venv = Path(str(ansible_site_312["venv"]))
    before = str(ansible_site_312["before"])
    assert ansible_site_312["after"] == before and "core 2.21." in before  # kept, not downgraded
    env = _outside() | {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    version = run(str(venv / "bin/sparkfab"), "--version")
    assert "ansible-core 2.21." in version.stdout and "mitogen_linear" in version.stdout, version.stdout
    from tests.helpers.site import site

    root = site(tmp_path / "site", REPO / "inventory/switch8-crs804-200.yml")
    env["HOME"] = str(tmp_path)
    # the site's ansible.cfg names the inventory and its vault password: the child reads both with 2.21
    rendered = subprocess.run(
        [str(venv / "bin/sparkfab"), "render", "-o", "tree"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rendered.returncode == 0, rendered.stderr
    # Ansible 2.21 opens what sparkfab re-encrypted with the site's vault password
    shown = subprocess.run(
        [
            str(venv / "bin/ansible"),
            "-i",
            "tree/inventory.yml",
            "spark-01",
            "-m",
            "debug",
            "-a",
            "var=ansible_become_password",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "s3cret-become-pw" in shown.stdout, shown.stdout + shown.stderr
    # Mitogen's strategy under ansible-core 2.21, as the runs use it
    play = tmp_path / "play.yml"
    play.write_text('- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.command: "true"\n')
    strategy = subprocess.run(
        [
            str(venv / "bin/python"),
            "-c",
            "import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    mitogen = {"ANSIBLE_STRATEGY_PLUGINS": f"{strategy}/plugins/strategy", "ANSIBLE_STRATEGY": "mitogen_linear"}
    local = ["-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=/usr/bin/python3"]
    ran = subprocess.run(
        [str(venv / "bin/ansible-playbook"), *local, str(play)],
        cwd=tmp_path,
        env=env | mitogen,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0 and "ok=1" in ran.stdout, ran.stdout[-2000:] + ran.stderr[-2000:]


@pytest.mark.lab
@pytest.mark.xdist_group("pair2")  # beside the lab tier's pair2 tests: one worker, one lock
@pytest.mark.skipif(lab_ready() is not None, reason=lab_ready() or "")
def test_a_lab_cycle_runs_on_python_312_with_ansible_core_221(ansible_site_312):
    """An installed sparkfab with its lab extra, from a folder of its own (the shipped content,
    not the checkout's): the lab's push and checks through ansible-core 2.21 (Mitogen's
    strategy) on Python 3.12: apply, a no-op apply in check mode, verify, reset."""
    bin_dir = Path(str(ansible_site_312["venv"])) / "bin"
    here = {"bin": bin_dir, "cwd": bin_dir.parent.parent}  # a folder without an ansible.cfg
    inv = str(REPO / "inventory/pair-2cables.yml")
    with holding("pair2"):
        _lab_cycle(here, inv)


def _lab_cycle(here: dict, inv: str) -> None:
    _run(here, "lab", "down", inv)
    try:
        up = _run(here, "lab", "up", inv, "--engine", "collective")
        assert up.returncode == 0, up.stderr[-1500:]
        for verb in (
            ("apply", inv, "--lab", "-q"),
            ("apply", inv, "--lab", "--check", "-q"),
            ("verify", inv, "--lab"),
            ("reset", inv, "--lab", "-q"),
        ):
            res = _run(here, *verb, timeout=600)
            assert res.returncode == 0, (verb, res.stdout[-1500:], res.stderr[-1500:])
        version = _run(here, "--version").stdout
        assert "ansible-core 2.21." in version and "mitogen_linear" in version, version
        assert "site-packages" in version and "(a checkout)" not in version, version  # the shipped content
    finally:
        down = _run(here, "lab", "down", inv)
    assert down.returncode == 0, down.stderr[-800:]


def test_a_pure_python_wheel_installs_anywhere_and_samples_with_its_python_loop(tmp_path):
    """The wheel `pip wheel` builds here carries the sampler's C loop for this machine (x86_64);
    a Spark is aarch64. SPARKFAB_PURE_WHEEL=1 builds one wheel for every machine (py3-none-any,
    no compiled file); installed alone, its sampler reads counters with the Python loop."""
    env = {**_outside(), "SPARKFAB_PURE_WHEEL": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("sparkfab-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".so", ".pyd"))]
    site = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path\n"
        "from sparkfab.measure.counters import sampler\n"
        "assert sampler.__file__.startswith(sys.argv[1]), sampler.__file__\n"
        "stats = sampler.sample(sampler.counters_of(['lo'], 'netdev'), Path(sys.argv[2]), 0.001, 0.2, realtime=False)\n"
        "print(stats.impl, stats.samples, len(sampler.read(sys.argv[2]).t0))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(site), str(tmp_path / "lo.samples")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    impl, samples, read_back = out.stdout.split()
    assert impl == "python" and int(samples) > 50 and int(read_back) == int(samples), out.stdout
