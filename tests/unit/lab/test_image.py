"""The lab image is built by scripts/setup.sh beside the installs of the Python environments, with
the checkout on PYTHONPATH and no package of sparkfab's environment: its build has to stand on
the standard library alone. And a new image removes the older ones, but never while a lab is up."""

from __future__ import annotations

import ast
import subprocess
import sys

from sparkfab.lab import image, links
from tests.conftest import REPO

#: every module the build runs (a lazy import inside a function included)
BUILD_MODULES = ("sparkfab.lab.image", "sparkfab.lab.mirror")


def _imports(module: str) -> set[str]:
    """Each import statement of a module, as the statement `from M import N` or `import M`."""
    path = REPO / "fabric" / (module.replace(".", "/") + ".py")
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {f"import {a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out |= {f"from {node.module} import {a.name}" for a in node.names}
    return out


def test_the_image_build_imports_nothing_beyond_the_standard_library(tmp_path):
    statements = sorted({s for mod in BUILD_MODULES for s in _imports(mod)})
    assert "from sparkfab.lab import links" in statements  # the prune's own check, lazy
    code = "\n".join([*statements, "from sparkfab.lab import image", "print(image._name('lldpd'))", ""])
    # -S: no site-packages, as in the Python setup builds the image with before any venv exists
    res = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO / "fabric"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == image._name("lldpd")


def _images(base):
    return sorted(p.name for p in base.iterdir())


def test_older_images_go_only_while_no_lab_is_up(tmp_path, monkeypatch):
    base = tmp_path / "images"
    base.mkdir()
    monkeypatch.setenv("SPARKFAB_LAB_IMAGES", str(base))
    netns = tmp_path / "netns"
    netns.mkdir()
    monkeypatch.setattr(links, "NETNS_DIR", netns)
    for name in ("spark-aaaa", "spark-aaaa-nolldpd", "spark-bbbb", "container-bbbb-1.tar", ".spark-bbbb.lock"):
        (base / name).mkdir() if "." not in name else (base / name).write_text("")
    (netns / "sf-ring4-spark-1").write_text("")  # some lab is up: its machines may use an old image
    image._prune(keep="spark-aaaa")
    assert len(_images(base)) == 5
    (netns / "sf-ring4-spark-1").unlink()
    (netns / "other").write_text("")  # no lab's namespace
    image._prune(keep="spark-aaaa")
    assert _images(base) == ["spark-aaaa", "spark-aaaa-nolldpd"]
    (base / "spark-cccc").mkdir()
    monkeypatch.setattr(links, "NETNS_DIR", tmp_path / "absent")  # no namespace was ever made here
    image._prune(keep="spark-aaaa")
    assert _images(base) == ["spark-aaaa", "spark-aaaa-nolldpd"]
