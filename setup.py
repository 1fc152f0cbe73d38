"""Two things pyproject.toml cannot say.

- The optional C read loop of the sampler (optional=True: without a compiler the install goes
  on and the sampler uses its Python loop). With SPARKFAB_PURE_WHEEL=1 it is left out, and the
  wheel is pure Python (py3-none-any): one wheel for every machine, an aarch64 Spark's too.
- The content sparkfab runs besides its Python (launch recipes, Ansible roles and playbooks,
  ansible.cfg) lives at the top of the repository, where Ansible users expect it; a built wheel
  carries a copy inside the package (`sparkfab/_shipped/`), which `sparkfab.paths.repo_dir`
  finds when sparkfab runs outside a checkout. An editable install reads the checkout itself.
"""

import os
import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

SHIPPED = ("launchers", "roles", "playbooks", "ansible.cfg")


class BuildWithContent(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "sparkfab" / "_shipped"
        for name in SHIPPED:
            src = Path(name)
            if src.is_dir():
                shutil.copytree(
                    src, dest / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
                )
            else:
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)


LOOP = Extension("sparkfab.measure.counters._sampleloop", ["fabric/sparkfab/measure/counters/_sampleloop.c"], optional=True)

setup(
    ext_modules=[] if os.environ.get("SPARKFAB_PURE_WHEEL") == "1" else [LOOP],
    cmdclass={"build_py": BuildWithContent},
)
