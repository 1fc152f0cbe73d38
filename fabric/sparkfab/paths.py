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
import stat
from dataclasses import dataclass
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


#: where `private_tmp` makes its directory
TMP_ROOT = "/tmp"


def private_tmp() -> Path | None:
    """This user's short directory for Unix sockets (a socket's path holds 108 bytes at most):
    `/tmp/sparkfab-<uid>`, made 0700 if missing; None where it is not a directory of this user's
    that only this user can enter (another user could listen there). Not under `$TMPDIR`: every
    process of the user must find the same sockets, and a TMPDIR may be a run's own, or long."""
    d = Path(TMP_ROOT) / f"sparkfab-{os.getuid()}"
    try:
        d.mkdir(mode=0o700, exist_ok=True)
        st = d.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return d


def lab_dir(cluster: str) -> Path:
    """The directory of the lab of a cluster (its inventory, ssh_config, keys, pids, state)."""
    return Path(os.environ.get(LAB_ENV, "/var/lib/sparkfab/lab")) / cluster


@dataclass(frozen=True)
class LabPaths:
    """What a lab's directory holds, each in one place: `lab up` writes them, the verbs and `lab
    down` read them."""

    dir: Path

    @property
    def state_file(self) -> Path:
        """The lab's record (`lab.state.LabState`), written last by `lab up`."""
        return self.dir / "state.json"

    @property
    def inventory(self) -> Path:
        """The lab's copy of the user's inventory, with its recipes beside it in `launchers/`."""
        return self.dir / "inventory.yml"

    @property
    def cluster_state(self) -> Path:
        """The cluster's state (rendered tree, Ansible's artifacts, link speeds), as a real
        cluster keeps it in `state_dir`."""
        return self.dir / "state"

    @property
    def machines(self) -> Path:
        """One folder per booted machine: its disk's overlay, supervisor pid, console."""
        return self.dir / "machines"

    @property
    def keys(self) -> Path:
        return self.dir / "keys"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        """How sparkfab and Ansible reach the lab's Sparks."""
        return self.dir / "ssh_config"

    @property
    def logs(self) -> Path:
        """The switches' frame senders' and other daemons' logs."""
        return self.dir / "logs"

    @property
    def bin(self) -> Path:
        """The engine's command and Python, bound into every Spark (the lab image's `bin`)."""
        return self.dir / "image" / "bin"

    @property
    def model(self) -> Path:
        """The lab's model, made at `lab up`."""
        return self.dir / "model"


def lab_paths(cluster: str) -> LabPaths:
    return LabPaths(lab_dir(cluster))


def lab_inventory_file(cluster: str) -> Path:
    return lab_paths(cluster).inventory


def lab_state(cluster: str) -> Path:
    """The lab's `state.json`: present while the lab is up."""
    return lab_paths(cluster).state_file
