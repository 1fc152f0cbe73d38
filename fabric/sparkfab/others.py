"""What other packages print is not sparkfab's output.

A package sparkfab depends on may warn about a package it depends on (ansible-core 2.19's ssh
agent imports cryptography's DSA, which cryptography 51 deprecates with a Python warning at every
start of an Ansible program). The user can do nothing about it, and its line used to be the first
thing `sparkfab validate` printed. So, unless asked with `-v` (or with Python's own `-W` or
PYTHONWARNINGS, which win), the Python warnings of other packages are not shown: neither in
sparkfab's own process nor in the Ansible programs it starts (its reader of inventories,
ansible-playbook through ansible-runner, ansible-galaxy), which inherit PYTHONWARNINGS. sparkfab's
own warnings still show, and Ansible's own `[WARNING]` lines are not Python warnings: they are
passed on as before.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

#: the variable a child Python reads its warning filters from (and an ansible-playbook run's
#: environment carries: push.env.RUN_ENV)
ENV = "PYTHONWARNINGS"

#: the two lines Python's warnings module prints for one warning: "FILE:LINE: CATEGORY: message"
#: and, indented, the line of source it points at
_WARNING = re.compile(r"^\S.*?:\d+: (?:[A-Za-z_][\w.]*)?Warning: ")


def keep_quiet(verbose: int) -> None:
    """For this process and the programs it starts: other packages' Python warnings are not
    shown unless `verbose` (or the user gave Python filters of their own)."""
    if verbose or sys.warnoptions or os.environ.get(ENV):
        return
    warnings.filterwarnings("ignore")
    warnings.filterwarnings("default", module=r"sparkfab(\.|$)")
    os.environ[ENV] = "ignore"


def own_lines(text: str) -> list[str]:
    """The lines of a program's stderr that are not another package's Python warning (each is
    two lines: the warning and the source line under it, indented)."""
    out: list[str] = []
    skip_source = False
    for line in text.splitlines():
        if _WARNING.match(line):
            skip_source = True
            continue
        if skip_source and line.startswith((" ", "\t")):
            skip_source = False
            continue
        skip_source = False
        out.append(line)
    return out
