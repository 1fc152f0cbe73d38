"""Programs shipped inside the package, each a file that ruff and mypy read: those hosts receive
unchanged (`shipped`), those sparkfab runs on a host with its own python3 (`program`: the facts'
gatherer, the mesh probe, the LLDP probe), and the engines' oracles the controller runs in an
engine's environment."""

from __future__ import annotations

import functools
from importlib import resources

#: the files a rendered tree carries to every host, byte for byte
TO_HOSTS = ("collective.py", "exporter.py")


@functools.cache
def program(name: str) -> str:
    """The source of a program sparkfab runs on a host with `python3 -c` (its standard library
    only): a file of this folder, which ruff and mypy read as they read the package. Read when a
    verb first runs it, not when sparkfab starts."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def shipped() -> dict[str, str]:
    """The files hosts receive unchanged, by name."""
    return {name: resources.files(__name__).joinpath(name).read_text(encoding="utf-8") for name in TO_HOSTS}
