"""The inventory: one file (or an Ansible inventory directory) that is both what Ansible reads
and the cluster's description.

Loading is strict: the sparkfab block is parsed into frozen pydantic models that forbid
unknown keys (`model`), and every structural problem comes back at once as a `Problem` with
its path in the file, its line and a hint (`problems`, `locate`). `read` gives any inventory
Ansible reads as one tree in the plain shape. What the values mean together is checked by
`sparkfab.resolve`.
"""

from sparkfab.inventory.locate import line_of, path_text, split_end, walk
from sparkfab.inventory.model import CLUSTER_PATTERN, HostVars, Inventory, Sparkfab, hostname
from sparkfab.inventory.problems import parse_partial, plain
from sparkfab.inventory.read import is_plain, is_plain_file, load_raw, load_roundtrip, read

__all__ = [
    "CLUSTER_PATTERN",
    "HostVars",
    "Inventory",
    "Sparkfab",
    "hostname",
    "is_plain",
    "is_plain_file",
    "line_of",
    "load_raw",
    "load_roundtrip",
    "parse_partial",
    "path_text",
    "plain",
    "read",
    "split_end",
    "walk",
]
