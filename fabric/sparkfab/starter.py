"""`sparkfab init`: a commented starter inventory for a pair, a switchless ring or a switch.

Pure text: the verb writes it; the tests validate every size it can make.
"""

from __future__ import annotations

import re

from sparkfab.errors import UsageError
from sparkfab.inventory import CLUSTER_PATTERN

TOPOLOGIES = ("pair", "ring", "switch")
#: Sparks a CRS804 carries at 200 Gb/s: four 400G ports, each broken out into two 200G lanes.
SWITCH_MAX = 8
#: how many Sparks each starter takes (least, most, default): the one table `init`'s --sparks
#: (its bounds and help) and the starter's own check read
SIZES = {"pair": (2, 2, 2), "ring": (3, 16, 4), "switch": (2, SWITCH_MAX, 8)}
#: why a size is outside a topology's range, said with it
_WHY = {
    "pair": "a pair is two Sparks (a ring joins three or more)",
    "ring": "a switchless ring has {least} to {most} Sparks",
    "switch": "this starter puts {least} to {most} Sparks on one CRS804 at 200 Gb/s",
}


def sizes_help() -> str:
    """--sparks's help: each topology's range and default, from `SIZES`."""
    parts = [f"{t} {lo}" if lo == hi else f"{t} {lo}-{hi} (default {d})" for t, (lo, hi, d) in SIZES.items()]
    return "how many Sparks: " + ", ".join(parts)


_LAUNCHERS = {("pair", 2): "llama-3.3-70b-tp2", ("ring", 4): "glm-5.3-flash-ring4"}


def unedited(text: str) -> bool:
    """Whether `text` is a starter exactly as `init` wrote it (any topology, size and cluster
    name): `init -o` may replace such a file, never one its owner has edited."""
    found = re.search(r"^      cluster: (\S+) ", text, re.M)
    if not found or not text.startswith("# sparkfab starter inventory: "):
        return False
    for topology, (least, most, _) in SIZES.items():
        for n in range(least, most + 1):
            try:
                if starter(topology, n, found.group(1)) == text:
                    return True
            except UsageError:
                return False  # a cluster name init refuses: not one it wrote
    return False


def starter(topology: str, sparks: int | None = None, cluster: str | None = None) -> str:
    least, most, default = SIZES[topology]
    n = sparks or default
    if not least <= n <= most:
        raise UsageError(f"--sparks {n}: {_WHY[topology].format(least=least, most=most)}")
    name = {"pair": "pair", "ring": f"ring{n}", "switch": f"sw{n}"}[topology] if cluster is None else cluster
    if not re.fullmatch(CLUSTER_PATTERN, name):
        raise UsageError(f"--cluster {name!r}: lower-case letters, digits and '-', at most 20 characters")
    hosts = [f"spark-{i + 1:02d}" for i in range(n)]
    lines = [
        f"# sparkfab starter inventory: {_what(topology, n)} (`sparkfab init`).",
        "# For an editor's completion: `sparkfab schema -o schema.json`, then a first line of",
        "# `# yaml-language-server: $schema=./schema.json`.",
        "# Replace the management addresses, check the cables against what is plugged in",
        "# (`sparkfab discover` reads them over LLDP), then: sparkfab validate THIS_FILE",
        "all:",
        "  hosts:",
        "    # name: {ansible_host: management address}; optional: rank, mgmt_if (default enP7s7),",
        "    # ansible_user / ansible_port / ansible_ssh_private_key_file",
        *(f"    {h}: {{ansible_host: 10.0.0.{11 + i}}}" for i, h in enumerate(hosts)),
        "  vars:",
        "    sparkfab:",
        f"      cluster: {name}                # lower-case, at most 20 characters (it prefixes lab names)",
        "      link_speed: 200               # 200 | 100e (emulated: one PCIe root) | 100 (100G lanes or cables)",
        "      mtu: 9000",
        f"      subnet_pool: 192.168.0.0/{_pool_prefix(topology, n)}"
        + "  # fabric rails are carved from here, one /24 each (two per cable: the twins)",
        f"      control_plane: {'fabric' if topology == 'ring' else 'management'}"
        + (
            "         # NCCL bootstrap, Gloo and vLLM's control traffic routed around the ring"
            if topology == "ring"
            else ""
        ),
    ]
    if topology == "switch":
        lines += ["      switches:", "        sw1: {model: CRS804}       # or CRS812, or generic with ports and speed"]
    lines += ["      cables:", *_cables(topology, hosts)]
    launcher = _LAUNCHERS.get((topology, n)) or ("glm-5.3-tp8" if (topology, n) == ("switch", 8) else None)
    lines += [
        "      instances:",
        "        model:",
        f"          hosts: [{', '.join(hosts)}]",
        f"          tp: {n}                        # one rank per Spark",
        f"          launcher: {launcher}"
        if launcher
        else "          # launcher: a recipe from launchers/ (see `sparkfab validate`'s list)",
    ]
    return "\n".join(lines) + "\n"


def _pool_prefix(topology: str, n: int) -> int:
    """The smallest pool of /24 rails that holds the topology's rails (two per direct cable)."""
    rails = 2 if topology == "switch" else 2 * (1 if topology == "pair" else n)
    return 24 - max(1, (rails - 1).bit_length())


def _what(topology: str, n: int) -> str:
    return {
        "pair": "two Sparks joined by one QSFP cable",
        "ring": f"{n} Sparks in a switchless ring, port 1 of each to port 0 of the next",
        "switch": f"{n} Sparks on a MikroTik CRS804, 2x200G breakout cables",
    }[topology]


def _cables(topology: str, hosts: list[str]) -> list[str]:
    if topology == "pair":
        return [f"        - [{hosts[0]}:p1, {hosts[1]}:p1]      # port 1 to port 1"]
    if topology == "ring":
        return [f"        - [{h}:p1, {hosts[(i + 1) % len(hosts)]}:p0]" for i, h in enumerate(hosts)]
    return [
        f"        - [{h}:p1, sw1:{i // 2 + 1}/{i % 2 + 1}]      # switch port {i // 2 + 1}, lane {i % 2 + 1}"
        for i, h in enumerate(hosts)
    ]
