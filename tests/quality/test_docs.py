"""The front door and the manual: a README that fits a screen, a documentation site built
strictly, reference pages that match the code they are generated from, and pages that a real
browser draws (headless Chromium, the screenshots kept in docs/screenshots)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers.bench import bench

#: where each section of the README before the site (2546b4d, 100 KB) went, whole
FORMER_SECTIONS = {
    "Quick start": "tutorial/first-lab.md",
    "The inventory": "how-to/inventory.md",
    "Verbs": "reference/cli/common.md",  # each verb's row: reference/cli/notes/<verb>.md
    "What is generated": "reference/generated-files.md",
    "Model, image, token and cache": "how-to/serve.md",
    "What verify checks": "how-to/verify.md",
    "Results in vLLM's terms": "how-to/serve.md",
    "The switch side": "how-to/switch-side.md",
    "Watching the fabric while it serves": "how-to/monitoring.md",
    "Estimate: the network cost of tensor parallelism": "explanation/estimate.md",
    "The lab serves real vLLM: the paper's method end to end": "explanation/lab.md",
    "The paper's cluster in the lab": "explanation/lab.md",
    "Ansible content": "reference/ansible.md",
    "Performance": "explanation/performance.md",
    "Layout": "explanation/layout.md",
    "Safety of the lab": "explanation/lab.md",
}
CHROMIUM = shutil.which("chromium")


def test_the_readme_fits_a_screen_and_names_the_quick_start():
    text = (REPO / "README.md").read_text()
    assert len(text.encode()) <= 10 * 1024
    assert "scripts/demo.sh" in text and "scripts/test.sh" in text


def test_every_former_readme_section_is_in_the_manual():
    for section, page in FORMER_SECTIONS.items():
        assert len((REPO / "docs" / page).read_text()) > 500, (section, page)
    notes = {p.stem for p in (REPO / "docs/reference/cli/notes").glob("*.md")}
    assert {"apply", "verify", "discover", "linkspeed", "bench", "report", "lab"} <= notes


def test_the_generated_reference_is_what_the_code_says():
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    stale = [str(p.relative_to(REPO)) for p, text in mod.pages(REPO / "docs" / "reference").items()
             if not p.is_file() or p.read_text() != text]  # fmt: skip
    assert not stale, f"stale: run scripts/docs_reference.py ({stale})"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    mkdocs = Path(sys.executable).with_name("mkdocs")
    res = subprocess.run([str(mkdocs), "build", "--strict", "-d", str(out)], cwd=REPO, capture_output=True,
                         text=True, env=env, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "WARNING" not in res.stderr, res.stderr[-3000:]
    return out


def test_the_site_builds_strictly_with_every_verb_page(site):
    from sparkfab.cli import VERBS

    for verb in VERBS:
        assert (site / "reference" / "cli" / verb.name / "index.html").is_file(), verb.name


def _shot(url: str, png: Path, size: str = "1280,900") -> None:
    """A page as headless Chromium draws it, no network beyond the file."""
    profile = png.with_suffix(".profile")
    argv = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--window-size={size}", f"--screenshot={png}", url]  # fmt: skip
    subprocess.run(argv, capture_output=True, timeout=120, check=False)
    shutil.rmtree(profile, ignore_errors=True)
    assert png.is_file(), url


def _drawn(png: Path) -> int:
    """How many colours the screenshot has: a blank or broken page has one or two."""
    from PIL import Image

    with Image.open(png) as im:
        return len(im.convert("RGB").getcolors(maxcolors=1 << 20) or [])


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium (scripts/setup.sh installs it)")
def test_chromium_draws_the_home_a_verb_page_a_topology_and_the_report(site, tmp_path, double, cli):
    url = double("--token-interval-s", "0.0005")
    p = tmp_path / "plan.yml"
    p.write_text("- {name: P1, requests: 2, prompt_tokens: 64, output_tokens: 8}\n")
    for label in ("200", "100e"):
        ran = bench(cli, url, str(p), "--rounds", "1", "--warmup", "0", "--idle-seconds", "0",
                    "--link-speed", label, "-o", str(tmp_path / label))  # fmt: skip
        assert ran.code == 0, ran.err
    assert cli("report", str(tmp_path / "200"), str(tmp_path / "100e"), "-o", str(tmp_path / "rep")).code == 0
    shots = {
        "site-home.png": f"file://{site}/index.html",
        "site-verb-verify.png": f"file://{site}/reference/cli/verify/index.html",
        "topology-switch8.png": f"file://{REPO}/docs/images/switch8-crs804-200.svg",
        "report.png": f"file://{tmp_path}/rep/report.html",
    }
    kept = REPO / "docs" / "screenshots"
    for name, page in shots.items():
        png = tmp_path / name
        _shot(page, png)
        assert _drawn(png) > 16, f"{name}: a blank page"
        if os.environ.get("SPARKFAB_REGEN") == "1":
            shutil.copyfile(png, kept / name)
    assert all((kept / n).is_file() for n in shots)


#: verbs a guide's command runs here as written (they read files, write files, reach no host)
RUNS_HERE = {"init", "validate", "plan", "render", "graph", "schema", "estimate", "completion", "exporter"}


def _commands(page: Path) -> list[str]:
    """The `sparkfab ...` commands of a page's shell blocks, comments cut, `&&` chains split."""
    out, inside = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside and line.strip() in ("```sh", "```bash", "```shell")
            continue
        if inside:
            for part in line.split("#", 1)[0].split("&&"):
                if part.strip().startswith("sparkfab "):
                    out.append(part.strip())
    return out


@pytest.mark.parametrize("page", sorted((REPO / "docs").glob("[th]*/*.md")), ids=lambda p: p.stem)
def test_the_guides_commands_parse_and_those_that_can_run_here_run(page, tmp_path):
    """Every command of the tutorial and the how-to guides is one sparkfab's own parser takes;
    the ones that reach no host run here, in order, in a folder holding the examples."""
    import shlex

    from sparkfab.cli import parser

    shutil.copytree(REPO / "inventory", tmp_path / "inventory")
    for command in _commands(page):
        words = shlex.split(command)[1:]
        if ">" in words:  # a redirection: the command's own words before it
            words = words[: words.index(">")]
        parser().parse_args(words)  # exits 2 on a command line it does not take
        if words[0] not in RUNS_HERE or (words[0] == "exporter" and words[1] not in ("prometheus", "dashboard")):
            out = next((words[i + 1] for i, w in enumerate(words) if w in ("-o", "--output")), None)
            if out and (tmp_path / "site.yml").exists():  # what a host-reaching verb writes: its inventory
                shutil.copyfile(tmp_path / "site.yml", tmp_path / out)
            continue
        res = subprocess.run([sys.executable, "-m", "sparkfab", *words], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120, env={**os.environ, "SPARKFAB_ORACLE": "off"})  # fmt: skip
        assert res.returncode == 0, (command, res.stderr[-1500:])
