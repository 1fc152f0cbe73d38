#!/usr/bin/python
"""Ansible module: this host's fabric netplan in two runs (check, then converge) instead of a
task per step: other netplan files that configure a fabric netdev (refused or taken over), the
values sparkfab changes recorded before its first apply, whether the engine runs, whether the
planned file differs; then the file validated by netplan and installed, and the live fabric
compared with the plan (what tells the role to run `netplan apply`)."""

DOCUMENTATION = r"""
module: sparkfab_netplan
author: sparkfab developers (!UNKNOWN)
short_description: Converge the fabric netplan of this host (check, then converge)
description:
  - C(stage=check) changes nothing but the foreign files it moves and the record below; it
    runs on every host before any host installs anything, and fails (refuses) where a foreign
    file is found or where the planned file differs while the engine runs. C(pending) in its
    result says whether C(converge) has anything to do (a file differs, files were moved, the
    live fabric lacks something).
  - C(stage=converge) is given every host's refusal and, with any, fails on every host before it
    changes anything (a refusal stops them all). Otherwise it installs the planned netplan files
    that differ (each validated by C(netplan generate) first), drops the addresses of netdevs
    whose files were moved aside, and compares the live addresses, MTUs and control routes with
    the plan. C(apply) in its result says that C(netplan apply) is due.
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
  - Refuses a planned file for NetworkManager where NetworkManager does not run (nothing would
    read the profiles netplan writes for it), and one for networkd where a running NetworkManager
    holds a fabric netdev with a connection of its own (both would configure it).
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
  stage:
    description: C(check) (foreign files, the record, the engine, the preview) or C(converge).
    type: str
    choices: [check, converge]
    default: check
  bundle_text:
    description:
      - 'The host''s bundle (JSON, C({"files": {path: {content, mode, kind}}})).'
      - Its files of kind C(netplan) are the plan.
    type: str
  record_before:
    description:
      - In C(check), write C(/etc/sparkfab/before) if it is not there.
      - It holds the MTUs, rp_filter, arp_ignore, arp_announce, forwarding and whether the ip filter table exists.
    type: bool
    default: false
  instance:
    description: In C(check), the serving instance whose engine is probed (pid file, else a running container).
    type: str
  addresses:
    description: The planned C({dev, address}) of each fabric netdev (compared with the live ones).
    type: list
    elements: dict
    default: []
  mtu:
    description: The planned MTU of every fabric netdev.
    type: int
  routes:
    description: The planned control routes C({to, via, dev}).
    type: list
    elements: dict
    default: []
  moved:
    description: In C(converge), whether C(check) moved foreign files aside (an apply is due).
    type: bool
    default: false
  flush:
    description: In C(converge), netdevs whose IPv4 addresses are flushed (those the moved files configured).
    type: list
    elements: str
    default: []
  force:
    description:
      - In C(check), leave a differing file to be applied although the engine of C(instance) runs.
      - Without it the check fails with the reason (applying changes the RoCE GID tables under the engine).
    type: bool
    default: false
  refused:
    description:
      - In C(converge), every host's refusal from C(check) (host -> message, empty or null where none).
      - Any refusal fails the run on every host before it changes anything; a host's own names its reason.
    type: dict
    default: {}
  host:
    description: In C(converge), this host's name among C(refused).
    type: str
"""

EXAMPLES = r"""
- name: Check this host before any host changes (foreign netplan files, the record for reset, the engine)
  sparkfab.fabric.sparkfab_netplan:
    stage: check
    netdevs: [enp1s0f0np0, enp1s0f1np1, enP2p1s0f0np0, enP2p1s0f1np1]
    bundle_text: "{{ lookup('ansible.builtin.file', inventory_dir ~ '/bundles/' ~ inventory_hostname ~ '.json') }}"
    record_before: true
  register: checked

- name: Install the planned netplan file and compare the live fabric with it
  sparkfab.fabric.sparkfab_netplan:
    stage: converge
    netdevs: [enp1s0f1np1, enP2p1s0f1np1]
    bundle_text: "{{ lookup('ansible.builtin.file', '/tmp/spark-01.json') }}"
    take_over: true
  register: converged

- name: Apply it when the file changed or the live fabric differs
  ansible.builtin.command: netplan apply
  when: converged.apply
  changed_when: true
"""

RETURN = r"""
foreign:
  description: One entry per file, C({path, netdevs}).
  type: list
  returned: always
moved:
  description: C({from, to}) per file moved (or, in check mode, to be moved).
  type: list
  returned: stage check
engine_running:
  description: Whether the engine of C(instance) runs.
  type: bool
  returned: stage check
netplan_differs:
  description: Whether a planned netplan file differs from the installed one.
  type: bool
  returned: stage check
pending:
  description: Whether C(converge) has anything to do (a file differs, files were moved, drift).
  type: bool
  returned: stage check
installed:
  description: The netplan files written (or, in check mode, to be written).
  type: list
  returned: stage converge
drift:
  description: What the live fabric lacks (an address, the MTU, a route), a line each.
  type: list
  returned: always
apply:
  description: Whether C(netplan apply) is due (a file installed, addresses flushed, drift, files moved).
  type: bool
  returned: stage converge
"""

import ipaddress
import json
import os
import shutil
import subprocess
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfab.fabric.plugins.module_utils.sparkfab_host import run, write_atomically
from ansible_collections.sparkfab.fabric.plugins.module_utils.sparkfab_netplan_files import (
    netplan_files,
    sysfs_facts,
    touched,
)


def _free(path):
    if not os.path.exists(path):
        return path
    n = 1
    while os.path.exists(f"{path}.{n}"):
        n += 1
    return f"{path}.{n}"


def foreign_files(module):
    """Find other netplan files that configure a fabric netdev; refuse them, or move them aside."""
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


def _read(path, default="-"):
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip() or default
    except OSError:
        return default


def _cmd(args):
    """(rc, stdout) of a command; rc 127 when it is not installed."""
    return run(args)[:2]


def record_before(module):
    """Write /etc/sparkfab/before once: the values sparkfab changes, as they are before its first
    apply (`sparkfab reset` puts them back; later applies keep the first record)."""
    path = os.path.join(module.params["root"], "etc/sparkfab/before")
    if os.path.exists(path) or module.check_mode:
        return False
    lines = ["# sparkfab: values before its first apply (sparkfab reset restores them)"]
    lines.append(f"sysctl net.ipv4.ip_forward {_read('/proc/sys/net/ipv4/ip_forward')}")
    present = _cmd(["nft", "list", "table", "ip", "filter"])[0] == 0
    lines.append(f"table ip-filter {'present' if present else 'absent'}")
    for dev in module.params["netdevs"]:
        lines.append(f"mtu {dev} {_read(f'/sys/class/net/{dev}/mtu')}")
        for key in ("rp_filter", "arp_ignore", "arp_announce"):
            lines.append(f"sysctl net.ipv4.conf.{dev}.{key} {_read(f'/proc/sys/net/ipv4/conf/{dev}/{key}')}")
    write_atomically(path, "\n".join(lines) + "\n", 0o644)
    return True


def engine_running(root, instance):
    """The engine of `instance` runs: its pid file names a live process, or its container runs."""
    try:
        with open(os.path.join(root, f"run/sparkfab/{instance}.pid"), encoding="ascii") as f:
            os.kill(int(f.read().strip()), 0)
        return True
    except (OSError, ValueError):
        pass
    if shutil.which("docker") is None:
        return False
    name = f"name=^sparkfab-{instance}$"
    rc, out = _cmd(["docker", "ps", "-q", "--filter", name, "--filter", "status=running"])
    return rc == 0 and bool(out.strip())


def planned(module):
    """[(dest, content, mode)] of the bundle's netplan files."""
    text = module.params["bundle_text"]
    if not text:
        return []
    try:
        files = json.loads(text)["files"]
    except (ValueError, KeyError, TypeError) as e:
        module.fail_json(msg=f"cannot read the bundle: {e}")
    return [(path, f["content"], int(f["mode"], 8)) for path, f in sorted(files.items()) if f["kind"] == "netplan"]


def _current(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(), os.stat(path).st_mode & 0o7777
    except OSError:
        return None, None


def _differs(module):
    root = module.params["root"]
    out = []
    for dest, content, mode in planned(module):
        old, old_mode = _current(os.path.join(root, dest.lstrip("/")))
        if (old, old_mode) != (content, mode):
            out.append((dest, content, mode, old, old_mode))
    return out


def validate(module, dest, content):
    """netplan generate on the file alone, in a scratch root (as the copy module's validate did)."""
    if shutil.which("netplan") is None:
        module.fail_json(msg="netplan is not installed: it is what applies the fabric's configuration")
    with tempfile.TemporaryDirectory(prefix="sparkfab-netplan-") as d:
        os.makedirs(os.path.join(d, "etc/netplan"))
        write_atomically(os.path.join(d, "etc/netplan/60-sparkfab.yaml"), content, 0o600)
        res = subprocess.run(["netplan", "generate", "--root-dir", d], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        module.fail_json(msg=f"netplan generate refuses {dest}: {(res.stderr or res.stdout).strip()[-1500:]}")


def _json(args):
    """The parsed JSON output of an `ip -j` command ([] when it fails or says nothing)."""
    rc, out = _cmd(args)
    try:
        return json.loads(out) if rc == 0 and out.strip() else []
    except ValueError:
        return []


def _net(text):
    """A route's destination as `ip route show` selects it: the exact prefix ("default" is 0/0);
    None for what is not a prefix."""
    try:
        return ipaddress.ip_network("0.0.0.0/0" if text == "default" else str(text), strict=False)
    except ValueError:
        return None


def drift(module):
    """What the live fabric lacks against the plan: addresses, the MTU, the control routes (one
    `ip` run for all addresses and one for all routes, not one per item)."""
    p = module.params
    out = []
    if p["addresses"]:
        live = {
            (link.get("ifname"), f"{a.get('local')}/{a.get('prefixlen')}")
            for link in _json(["ip", "-j", "-4", "addr", "show"])
            for a in link.get("addr_info", [])
        }
        out += [f"{a['dev']}: no {a['address']}" for a in p["addresses"] if (a["dev"], a["address"]) not in live]
    if p["mtu"]:
        for dev in p["netdevs"]:
            if _read(f"/sys/class/net/{dev}/mtu", "") != str(p["mtu"]):
                out.append(f"{dev}: MTU not {p['mtu']}")
    if p["routes"]:
        routes = {
            (_net(r.get("dst")), r.get("dev"), r.get("gateway")) for r in _json(["ip", "-j", "-4", "route", "show"])
        }
        out += [
            f"no route to {r['to']} via {r['via']}"
            for r in p["routes"]
            if (_net(r["to"]), r["dev"], str(r["via"])) not in routes
        ]
    return out


def _active(unit):
    rc, out = _cmd(["systemctl", "is-active", unit])
    return rc != 127 and out.strip() == "active"


def nm_held(netdevs):
    """The fabric netdevs NetworkManager holds with a connection of its own (not one netplan
    wrote, which netplan apply replaces): {netdev: its connection}."""
    rc, out = _cmd(["nmcli", "-t", "-f", "DEVICE,STATE,CONNECTION", "device"])
    if rc != 0:
        return {}
    held = {}
    for line in out.splitlines():
        dev, rest = (line.split(":", 1) + [""])[:2]
        state, conn = (rest.split(":", 1) + [""])[:2]
        conn = conn.replace("\\:", ":")
        # "connected (externally)": configured by another (networkd), which NetworkManager only watches
        if (
            dev in netdevs
            and state != "unmanaged"
            and "externally" not in state
            and conn
            and not conn.startswith("netplan-")
        ):
            held[dev] = conn
    return held


def renderer_refusal(module):
    """The planned netplan's renderer against the network services of this host. The profiles
    netplan writes for NetworkManager are read only where NetworkManager runs. A file for networkd
    beside a running NetworkManager is refused only where NetworkManager holds a fabric netdev with
    a connection of its own (Ubuntu's automatic "Wired connection" runs DHCP on every port with
    carrier): netplan apply would have systemd-networkd configure the netdev while NetworkManager
    keeps its own activation on it (NetworkManager reads netplan's list of netdevs to leave only
    when it restarts, which a networkd file does not make it do)."""
    if module.params["root"] != "/":  # a scratch root (tests): no services to ask
        return ""
    wanted = set()
    for _dest, content, _mode in planned(module):
        lines = (line.strip() for line in content.splitlines())
        wanted.update(line.split(":", 1)[1].strip() for line in lines if line.startswith("renderer:"))
    nm = _active("NetworkManager.service")
    # short enough for one line of sparkfab's summary (a host's message is cut past 300 characters)
    if "NetworkManager" in wanted and not nm:
        return (
            "NetworkManager does not run on this host, and the fabric's netplan is for it: set netplan_renderer: "
            "networkd under sparkfab:, or start NetworkManager"
        )
    held = nm_held(module.params["netdevs"]) if "networkd" in wanted and nm else {}
    if held:
        return (
            f"NetworkManager holds {', '.join(sorted(held))} with its own connections: set netplan_renderer: "
            "NetworkManager under sparkfab: (networkd would take them too)"
        )
    return ""


def check(module):
    result = foreign_files(module)
    why = renderer_refusal(module)
    if why:
        module.fail_json(msg=why, **result)
    result["changed"] = record_before(module) if module.params["record_before"] else False
    result["changed"] = result["changed"] or bool(result["moved"])
    result["engine_running"] = (
        engine_running(module.params["root"], module.params["instance"]) if module.params["instance"] else False
    )
    result["netplan_differs"] = bool(_differs(module))
    result["drift"] = drift(module)
    result["pending"] = result["netplan_differs"] or bool(result["moved"] or result["drift"])
    if result["engine_running"] and result["netplan_differs"] and not module.params["force"]:
        module.fail_json(
            msg=f"the engine of {module.params['instance']} runs on this host: re-applying netplan changes "
            "the RoCE GID tables and kills it. Stop serving first, or pass sparkfab_netplan_force=true.",
            **result,
        )
    return result


def converge(module):
    refused = {h: m for h, m in module.params["refused"].items() if m}
    if refused:
        mine = refused.pop(module.params["host"], None)
        others = f"{', '.join(sorted(refused))} refused (see {'their' if len(refused) > 1 else 'its'} message)"
        module.fail_json(msg=mine or f"nothing changed: {others}", refused=sorted(refused))
    root = module.params["root"]
    installed, diffs = [], []
    for dest, content, mode, old, old_mode in _differs(module):
        if not module.check_mode:
            validate(module, dest, content)
            write_atomically(os.path.join(root, dest.lstrip("/")), content, mode)
        installed.append(dest)
        if module._diff:
            before, after = old or "", content
            if old == content:
                before, after = f"mode {old_mode:04o}\n", f"mode {mode:04o}\n"
            diffs.append({"before_header": dest, "after_header": dest, "before": before, "after": after})
    flushed = []
    for dev in module.params["flush"]:
        if not module.check_mode:
            rc, _out = _cmd(["ip", "-4", "addr", "flush", "dev", dev])
            if rc != 0:
                module.fail_json(msg=f"ip -4 addr flush dev {dev} failed ({rc})")
        flushed.append(dev)
    lacking = drift(module)
    due = bool(installed or flushed or lacking or module.params["moved"])
    result = {"changed": due, "installed": installed, "flushed": flushed, "drift": lacking, "apply": due}
    if module._diff:
        result["diff"] = diffs
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "netdevs": {"type": "list", "elements": "str", "required": True},
            "own": {"type": "path", "default": "/etc/netplan/60-sparkfab.yaml"},
            "take_over": {"type": "bool", "default": False},
            "backup_dir": {"type": "path", "default": "/etc/sparkfab/backup/netplan"},
            "root": {"type": "path", "default": "/"},
            "stage": {"type": "str", "choices": ["check", "converge"], "default": "check"},
            "bundle_text": {"type": "str", "no_log": True},
            "record_before": {"type": "bool", "default": False},
            "instance": {"type": "str"},
            "addresses": {"type": "list", "elements": "dict", "default": []},
            "mtu": {"type": "int"},
            "routes": {"type": "list", "elements": "dict", "default": []},
            "moved": {"type": "bool", "default": False},
            "flush": {"type": "list", "elements": "str", "default": []},
            "force": {"type": "bool", "default": False},
            "refused": {"type": "dict", "default": {}},
            "host": {"type": "str"},
        },
        supports_check_mode=True,
    )
    module.exit_json(**(check(module) if module.params["stage"] == "check" else converge(module)))


if __name__ == "__main__":
    main()
