"""Who a lab Spark is reached as: one Spark of every lab logs in as the non-root user of the lab
image (`spark`, with sudo, as a Spark's owner logs in), the others as root, so that the push
and the checks are rehearsed both ways."""

from __future__ import annotations

from sparkfab.lab.image import LOGIN
from sparkfab.lab.spec import LabSpec, Node


def login_of(spec: LabSpec, node: Node) -> str:
    """The user a Spark of the lab is reached as: the last Spark's is not root."""
    return LOGIN if node.name == spec.sparks[-1].name else "root"
