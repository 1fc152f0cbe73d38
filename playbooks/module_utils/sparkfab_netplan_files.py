"""Which netplan files configure which netdevs, as netplan reads them: the files in netplan's order
of precedence, and whether a definition (by its id, `match:` on name, MAC address or driver,
`set-name`, or as a member of a bond or bridge) configures a fabric netdev. The netplan module
refuses or moves aside another file that does; `sparkfab preflight` loads this file by its path
(it imports nothing of Ansible) to give the same answer before apply."""

from __future__ import annotations

import fnmatch
import os

DIRS = ("run/netplan", "etc/netplan", "lib/netplan")  # netplan's precedence for one file name
SECTIONS = (
    "ethernets",
    "bonds",
    "bridges",
    "vlans",
    "vrfs",
    "wifis",
    "tunnels",
    "modems",
    "dummy-devices",
    "virtual-ethernets",
    "nm-devices",
)


def netplan_files(root):
    chosen = {}
    for d in DIRS:
        base = os.path.join(root, d)
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            if name.endswith(".yaml") and name not in chosen:
                chosen[name] = os.path.join(base, name)
    return [chosen[n] for n in sorted(chosen)]


def _globs(value):
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _matches(ident, conf, dev, facts):
    """Whether the definition `ident: conf` configures netdev `dev` (facts: what sysfs says of
    it, {"macaddress", "driver"}; a fact not known is taken to match). With `match:` every key
    given must hold, as networkd requires; the id itself is then only a label."""
    if not isinstance(conf, dict):
        return fnmatch.fnmatchcase(dev, str(ident))
    if conf.get("set-name") == dev:
        return True
    match = conf.get("match")
    if not isinstance(match, dict):
        return fnmatch.fnmatchcase(dev, str(ident))
    for key, value in match.items():
        if key == "name":
            ok = any(fnmatch.fnmatchcase(dev, g) for g in _globs(value))
        elif key == "macaddress" and facts.get("macaddress"):
            ok = str(value).lower() == facts["macaddress"].lower()
        elif key == "driver" and facts.get("driver"):
            ok = any(fnmatch.fnmatchcase(facts["driver"], g) for g in _globs(value))
        else:
            ok = True  # not provable here: it may match
        if not ok:
            return False
    return True


def touched(doc, netdevs, facts=None):
    """The fabric netdevs a parsed netplan document configures, sorted (`facts`: per netdev
    what sysfs says of it; without them a match by driver or MAC address counts as a hit)."""
    facts = facts or {}
    hits = set()
    network = doc.get("network") if isinstance(doc, dict) else None
    if not isinstance(network, dict):
        return []
    for section in SECTIONS:
        defs = network.get(section)
        if not isinstance(defs, dict):
            continue
        for ident, conf in defs.items():
            hits.update(dev for dev in netdevs if _matches(ident, conf, dev, facts.get(dev, {})))
            if isinstance(conf, dict):
                members = conf.get("interfaces") if isinstance(conf.get("interfaces"), list) else []
                hits.update(dev for dev in netdevs if dev in members or conf.get("link") == dev)
    return sorted(hits)


def sysfs_facts(root, netdevs):
    """What matches read of each netdev: its MAC address and its driver's name."""
    out = {}
    for dev in netdevs:
        base = os.path.join(root, "sys/class/net", dev)
        facts = {}
        try:
            with open(os.path.join(base, "address"), encoding="ascii") as f:
                facts["macaddress"] = f.read().strip()
            facts["driver"] = os.path.basename(os.readlink(os.path.join(base, "device/driver")))
        except OSError:
            pass
        out[dev] = facts
    return out
