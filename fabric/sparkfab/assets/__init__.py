"""Programs shipped inside the package: those hosts receive unchanged (`shipped`), the engines'
oracles the controller runs in an engine's environment, and the probe a lab Spark runs."""

from __future__ import annotations

from importlib import resources

#: the files a rendered tree carries to every host, byte for byte
TO_HOSTS = ("collective.py", "exporter.py")


def shipped() -> dict[str, str]:
    """The files hosts receive unchanged, by name."""
    return {name: resources.files(__name__).joinpath(name).read_text(encoding="utf-8") for name in TO_HOSTS}
