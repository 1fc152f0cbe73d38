"""What the collection's modules share on a host: the one atomic write of a file sparkfab
installs, and running a host's command. Imported by the modules as
`ansible_collections.sparkfab.fabric.plugins.module_utils.sparkfab_host`; Ansible (and Mitogen)
ship it to the host beside each module that imports it."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections import namedtuple

#: what a command did: unpacks as (rc, stdout, stderr), or read by name
Ran = namedtuple("Ran", ("returncode", "stdout", "stderr"))


def write_atomically(path, content, mode):
    """Write `content` to `path` with `mode`, owned by root where the module runs as root: into a
    temporary file beside it, then renamed over it, so a reader never sees half a file and a
    failed write leaves the old one."""
    d = os.path.dirname(path)
    os.makedirs(d, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".sparkfab-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        os.chmod(tmp, mode)
        if os.geteuid() == 0:
            os.chown(tmp, 0, 0)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run(args, check=False):
    """What a command did (`Ran`); rc 127 when it is not installed. `check`: a failure raises
    RuntimeError with the command and the start of what it said."""
    try:
        res = subprocess.run(args, capture_output=True, text=True, check=False)
    except OSError as e:
        ran = Ran(127, "", str(e))
    else:
        ran = Ran(res.returncode, res.stdout, res.stderr)
    if check and ran.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {(ran.stderr or ran.stdout).strip()[:300]}")
    return ran
