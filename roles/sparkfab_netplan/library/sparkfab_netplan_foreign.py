#!/usr/bin/python3
"""Ansible module: find other netplan files that configure a fabric netdev; refuse, or take them over."""

import fnmatch
import os
import shutil

DOCUMENTATION = r"""
module: sparkfab_netplan_foreign
short_description: Refuse (or move aside) other netplan files that configure the fabric netdevs
description:
  - netplan concatenates address lists across files, so an older file (such as NVIDIA's
    C(/etc/netplan/40-cx7.yaml)) that addresses a fabric netdev leaves it with two IPv4
    addresses and two RoCE GIDs.
  - Reads the files netplan reads (C(/run), C(/etc), C(/lib) under C(netplan/); for one
    name the first of those wins) except sparkfab's own, and names every definition that
    matches a fabric netdev by id, C(match.name) (globs), C(set-name), a member list
    (C(interfaces)) or a VLAN C(link).
  - A C(match) without C(name) (C(driver), C(macaddress), anything else) counts as touching a
    fabric netdev unless the netdev's own driver and MAC address (read from sysfs) prove it
    does not - networkd takes only the first matching .network file, and netplan's name for
    such a definition (C(10-netplan-<id>.network)) can sort before sparkfab's, replacing its
    whole configuration of the netdev.
  - With C(take_over), files under C(/etc/netplan) are moved into C(backup_dir) (never
    overwriting an earlier backup); files elsewhere cannot be moved and are refused.
  - Supports check mode and diff mode.
options:
  netdevs:
    description: The fabric netdevs of this host.
    type: list
    elements: str
    required: true
  own:
    description: sparkfab's own netplan file (ignored).
    type: path
    default: /etc/netplan/60-sparkfab.yaml
  take_over:
    description: Move the files aside instead of refusing.
    type: bool
    default: false
  backup_dir:
    description: Where moved files go.
    type: path
    default: /etc/sparkfab/backup/netplan
  root:
    description: Prefix for every path (tests).
    type: path
    default: /
"""

RETURN = r"""
foreign:
  description: One entry per file, C({path, netdevs}).
  type: list
  returned: always
moved:
  description: C({from, to}) per file moved (or, in check mode, to be moved).
  type: list
  returned: always
"""

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


def _free(path):
    if not os.path.exists(path):
        return path
    n = 1
    while os.path.exists(f"{path}.{n}"):
        n += 1
    return f"{path}.{n}"


def run(module):
    import yaml

    p = module.params
    root = p["root"]
    own = os.path.join(root, p["own"].lstrip("/"))
    foreign = []
    facts = sysfs_facts(root, p["netdevs"])
    for path in netplan_files(root):
        if os.path.abspath(path) == os.path.abspath(own):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            doc = yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            module.warn(f"cannot read {path}: {exc}")
            continue
        devs = touched(doc, p["netdevs"], facts)
        if devs:
            foreign.append({"path": path, "netdevs": devs, "text": text})
    report = [{"path": f["path"], "netdevs": f["netdevs"]} for f in foreign]
    if not foreign:
        return {"changed": False, "foreign": [], "moved": []}
    etc = os.path.join(root, "etc/netplan") + os.sep
    listing = "; ".join(f"{f['path']} configures {', '.join(f['netdevs'])}" for f in foreign)
    if not p["take_over"]:
        module.fail_json(
            msg=f"foreign netplan file: {listing}. netplan would merge it with sparkfab's and give these "
            "netdevs two addresses; rerun with --take-over-netplan to move it to "
            f"{p['backup_dir']} (restore by moving it back)",
            foreign=report,
        )
    stuck = [f["path"] for f in foreign if not f["path"].startswith(etc)]
    if stuck:
        module.fail_json(
            msg=f"foreign netplan file: {', '.join(stuck)} is not under /etc/netplan and cannot be moved; "
            "shadow it with an /etc/netplan file of the same name that leaves the fabric netdevs out",
            foreign=report,
        )
    backup = os.path.join(root, p["backup_dir"].lstrip("/"))
    moved, diffs = [], []
    for f in foreign:
        dest = _free(os.path.join(backup, os.path.basename(f["path"])))
        moved.append({"from": f["path"], "to": dest})
        diffs.append({"before": f["text"], "after": "", "before_header": f["path"], "after_header": f"{f['path']}"})
        if not module.check_mode:
            os.makedirs(backup, mode=0o700, exist_ok=True)
            shutil.move(f["path"], dest)
    return {"changed": True, "foreign": report, "moved": moved, "diff": diffs}


def main():
    # imported here: sparkfab's preflight loads this file for `touched` and must not import
    # Ansible (it patches sys.intern for the whole process, which torch then refuses)
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(
        argument_spec={
            "netdevs": {"type": "list", "elements": "str", "required": True},
            "own": {"type": "path", "default": "/etc/netplan/60-sparkfab.yaml"},
            "take_over": {"type": "bool", "default": False},
            "backup_dir": {"type": "path", "default": "/etc/sparkfab/backup/netplan"},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
