"""The one ssh_config writer: the lab's (keys and known hosts of its own) and the one verify,
discover and preflight write for real hosts (what Ansible's variables say), both multiplexed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparkfab.render.text import fill


@dataclass(frozen=True)
class Block:
    patterns: tuple[str, ...]
    options: tuple[str, ...]


def multiplexed(control_dir: Path) -> tuple[str, ...]:
    """One master connection per host, kept two minutes; the sockets in `control_dir`. A host
    that goes silent is dropped after 30 s of unanswered keepalives (not the kernel's TCP
    timeout, which is a quarter of an hour)."""
    return (
        "ControlMaster auto",
        f"ControlPath {control_dir}/cm-%C",
        "ControlPersist 120s",
        "ConnectTimeout 10",
        "ServerAliveInterval 5",
        "ServerAliveCountMax 6",
    )


def ssh_config(comment: str, blocks: list[Block], include: Path | None = None) -> str:
    """The blocks, then `include` (the user's own ~/.ssh/config) for every host."""
    return fill("ssh_config.j2", comment=comment, blocks=blocks, include=include)
