"""Every place sparkfab keeps files on this machine, in one module.

- A cluster's state (rendered tree, Ansible artifacts, link speeds, verify's ssh_config):
  `$SPARKFAB_STATE_DIR/<cluster>`, else `/var/lib/sparkfab/<cluster>` as root and
  `~/.local/state/sparkfab/<cluster>` otherwise.
- A lab: `$SPARKFAB_LAB_DIR/<cluster>`, else `/var/lib/sparkfab/lab/<cluster>`; its state
  lives inside it (`state/`), so `lab down` removes everything at once.
- The lab's images (a lab Spark's root, its container image), built once and kept:
  `$SPARKFAB_LAB_IMAGES`, else `/var/lib/sparkfab/lab-images` (`sparkfab.lab.image`).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def repo_dir(name: str) -> Path:
    """Where the content beside the package lives (`launchers`, `roles`, `playbooks`,
    `ansible.cfg`): under SPARKFAB_HOME when it is set, else in the checkout sparkfab runs from
    (an editable install), else in the copy a built wheel carries (`sparkfab/_shipped`)."""
    home = os.environ.get("SPARKFAB_HOME")
    if home:
        return Path(home) / name
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.exists():
        return checkout
    return Path(str(resources.files("sparkfab"))) / "_shipped" / name


STATE_ENV = "SPARKFAB_STATE_DIR"
LAB_ENV = "SPARKFAB_LAB_DIR"


def state_dir(cluster: str) -> Path:
    """Where sparkfab keeps the state of a cluster of real hosts."""
    base = os.environ.get(STATE_ENV) or (
        "/var/lib/sparkfab" if os.geteuid() == 0 else str(Path.home() / ".local/state/sparkfab")
    )
    return Path(base) / cluster


def lab_dir(cluster: str) -> Path:
    """The directory of the lab of a cluster (its inventory, ssh_config, keys, pids, state)."""
    return Path(os.environ.get(LAB_ENV, "/var/lib/sparkfab/lab")) / cluster


def lab_inventory(cluster: str) -> Path:
    return lab_dir(cluster) / "inventory.yml"


def lab_state(cluster: str) -> Path:
    """The lab's `state.json`: present while the lab is up."""
    return lab_dir(cluster) / "state.json"
