#!/usr/bin/python
"""Ansible module: undo what sparkfab installed on this host, in one run."""

DOCUMENTATION = r"""
module: sparkfab_reset
author: sparkfab developers (!UNKNOWN)
short_description: Remove what sparkfab installed on a host and restore what it moved aside
description:
  - Files - sparkfab's netplan file, everything under /etc/sparkfab, its sysctl.d and lldpd.d
    files, its units (the firewall's, the DOCKER-USER one and the exporter, which is stopped), the include line in
    /etc/nftables.conf that earlier versions wrote.
  - Netplan files that apply moved aside (--take-over-netplan) go back where they were, unless
    something else took their place (then they stay in the backup and the result says so).
  - Runtime - the nftables table, sparkfab's DOCKER-USER rules (and the chain, when sparkfab made
    it), its ufw rules, the sysctls and MTUs as they were before the first apply (recorded by
    the netplan role in /etc/sparkfab/before), and the IPv4 addresses and routes of the fabric netdevs.
  - Idempotent (a second run finds nothing); check mode reports, diff mode shows removed files.
options:
  netdevs:
    description: The fabric netdevs of this host.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Remove what sparkfab installed and restore what it moved aside
  sparkfab.fabric.sparkfab_reset:
    netdevs: [enp1s0f0np0, enp1s0f1np1, enP2p1s0f0np0, enP2p1s0f1np1]
  register: reset

- name: Apply netplan without sparkfab's file
  ansible.builtin.command: netplan apply
  when: reset.netplan_changed
  changed_when: true
"""

RETURN = r"""
actions:
  description: What was (or in check mode would be) done, one line each.
  type: list
  returned: always
netplan_changed:
  description: Whether netplan's files changed (then netplan must be applied again).
  type: bool
  returned: always
kept:
  description: Moved-aside netplan files left in the backup because their place is taken.
  type: list
  returned: always
"""

import json
import os
import re
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfab.fabric.plugins.module_utils.sparkfab_host import run

NETPLAN = "/etc/netplan/60-sparkfab.yaml"
ETC = "/etc/sparkfab"
BACKUP = "/etc/sparkfab/backup/netplan"
BEFORE = "/etc/sparkfab/before"
FILES = ("/etc/sysctl.d/60-sparkfab.conf", "/etc/lldpd.d/sparkfab.conf")
UNITS = ("sparkfab-firewall.service", "sparkfab-docker-user.service", "sparkfab-exporter.service")
#: units that run a process: stopped as well as disabled
RUNNING_UNITS = ("sparkfab-exporter.service",)
NFT_INCLUDE = 'include "/etc/sparkfab/firewall.nft"'
COMMENT = "sparkfab"


def have(tool):
    return shutil.which(tool) is not None


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


class Reset:
    def __init__(self, module):
        self.m = module
        self.check = module.check_mode
        self.actions, self.diffs, self.kept = [], [], []
        self.netplan_changed = False

    def do(self, text, fn=None, *args):
        self.actions.append(text)
        if not self.check and fn is not None:
            fn(*args)

    def remove_file(self, path):
        text = read(path)
        if text is None and not os.path.lexists(path):
            return
        self.diffs.append(
            {"before": text or "", "after": "", "before_header": path, "after_header": f"{path} (removed)"}
        )
        self.do(f"remove {path}", os.unlink, path)

    # -------------------------------------------------------------- what apply recorded
    def before(self):
        out = {"sysctl": {}, "mtu": {}, "table": {}}
        for line in (read(BEFORE) or "").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] in out and parts[2] != "-":
                out[parts[0]][parts[1]] = parts[2]
        return out

    # -------------------------------------------------------------- runtime
    def filter_table(self, before):
        """iptables-nft makes the table `ip filter` for the DOCKER-USER chain; a table that was
        not there before the first apply goes again once it holds no rule."""
        if before["table"].get("ip-filter") != "absent" or not have("nft"):
            return
        listing = run(["nft", "-j", "list", "table", "ip", "filter"])
        if listing.returncode != 0:
            return
        items = json.loads(listing.stdout or "{}").get("nftables", [])
        rules = [i for i in items if "rule" in i]
        policies = {i["chain"].get("policy", "accept") for i in items if "chain" in i}
        if not rules and policies <= {"accept"}:
            self.do(
                "delete the empty table ip filter (made for DOCKER-USER)",
                run,
                ["nft", "delete", "table", "ip", "filter"],
                True,
            )

    def firewall(self):
        if have("nft") and run(["nft", "list", "table", "inet", "sparkfab"]).returncode == 0:
            self.do("delete nftables table inet sparkfab", run, ["nft", "delete", "table", "inet", "sparkfab"], True)
        if not have("iptables"):
            return
        rules = run(["iptables", "-w", "-S", "DOCKER-USER"])
        if rules.returncode != 0:
            return
        ours = [r for r in rules.stdout.splitlines() if r.startswith("-A DOCKER-USER") and f"--comment {COMMENT}" in r]
        for rule in ours:
            args = rule.split()[2:]
            self.do(
                f"delete DOCKER-USER rule {' '.join(args)}", run, ["iptables", "-w", "-D", "DOCKER-USER", *args], True
            )
        others = [r for r in rules.stdout.splitlines() if r.startswith("-A DOCKER-USER") and r not in ours]
        jumped = "-j DOCKER-USER" in run(["iptables", "-w", "-S", "FORWARD"]).stdout
        if not others and not jumped:  # no Docker uses it: the chain is sparkfab's own
            self.do("delete the empty chain DOCKER-USER", run, ["iptables", "-w", "-X", "DOCKER-USER"], True)

    def ufw(self):
        rules = read(os.path.join(ETC, "ufw.rules"))
        if rules is None or not have("ufw"):
            return
        if "Status: active" not in run(["ufw", "status"]).stdout:
            return
        for rule in [r for r in rules.splitlines() if r.strip() and not r.startswith("#")]:
            self.do(f"ufw delete {rule}", run, ["ufw", "delete", *rule.split()])

    def units(self):
        """The units apply installed (only where systemd runs: /run/systemd/system)."""
        found = [u for u in UNITS if os.path.lexists(f"/etc/systemd/system/{u}")]
        systemd = os.path.isdir("/run/systemd/system") and have("systemctl")
        for unit in found:
            if systemd:
                now = ["--now"] if unit in RUNNING_UNITS else []
                self.do(f"disable {' '.join(now + [unit])}", run, ["systemctl", "disable", *now, unit])
            self.remove_file(f"/etc/systemd/system/{unit}")
        if found and systemd:
            self.do("systemctl daemon-reload", run, ["systemctl", "daemon-reload"])

    def nftables_conf(self):
        text = read("/etc/nftables.conf")
        if text is None or NFT_INCLUDE not in text:
            return
        new = "".join(line for line in text.splitlines(True) if line.strip() != NFT_INCLUDE)
        self.diffs.append({"before": text, "after": new, "before_header": "/etc/nftables.conf"})

        def write():
            with open("/etc/nftables.conf", "w", encoding="utf-8") as f:
                f.write(new)

        self.do("remove the include line from /etc/nftables.conf", write)

    def sysctls(self, before):
        for key, value in sorted(before["sysctl"].items()):
            now = run(["sysctl", "-n", key])
            if now.returncode == 0 and now.stdout.strip() != value:
                self.do(
                    f"sysctl {key} = {value} (was {now.stdout.strip()})", run, ["sysctl", "-q", "-w", f"{key}={value}"]
                )

    def links(self, before):
        ours = os.path.lexists(NETPLAN)  # without sparkfab's netplan file, the addresses are someone else's
        for dev in self.m.params["netdevs"]:
            if not os.path.exists(f"/sys/class/net/{dev}"):
                continue
            if ours:
                self.flush(dev)
            mtu = before["mtu"].get(dev)
            now = (read(f"/sys/class/net/{dev}/mtu") or "").strip()
            if mtu and now and now != mtu:
                self.do(
                    f"MTU of {dev} back to {mtu} (was {now})", run, ["ip", "link", "set", "dev", dev, "mtu", mtu], True
                )

    def flush(self, dev):
        addrs = json.loads(run(["ip", "-j", "-4", "addr", "show", "dev", dev]).stdout or "[]")
        if any(a.get("addr_info") for a in addrs):
            self.do(f"flush the IPv4 addresses of {dev}", run, ["ip", "-4", "addr", "flush", "dev", dev], True)
        routes = json.loads(run(["ip", "-j", "-4", "route", "show", "table", "all", "dev", dev]).stdout or "[]")
        if routes:
            self.do(
                f"flush the IPv4 routes over {dev}", run, ["ip", "-4", "route", "flush", "table", "all", "dev", dev]
            )

    # -------------------------------------------------------------- files
    def netplan(self):
        if os.path.lexists(NETPLAN):
            self.remove_file(NETPLAN)
            self.netplan_changed = True
        if not os.path.isdir(BACKUP):
            return
        for name in sorted(os.listdir(BACKUP)):
            original = os.path.join("/etc/netplan", re.sub(r"\.\d+$", "", name))
            if os.path.lexists(original):
                self.kept.append(os.path.join(BACKUP, name))
                continue
            text = read(os.path.join(BACKUP, name)) or ""
            self.diffs.append(
                {"before": "", "after": text, "before_header": original, "after_header": f"{original} (restored)"}
            )
            self.do(f"restore {original}", shutil.move, os.path.join(BACKUP, name), original)
            self.netplan_changed = True

    def etc(self):
        if not os.path.isdir(ETC):
            return
        keep = {os.path.join(ETC, "backup")} if self.kept else set()
        for root, _dirs, files in os.walk(ETC):
            if any(root == k or root.startswith(k + os.sep) for k in keep):
                continue
            for name in sorted(files):
                self.remove_file(os.path.join(root, name))
        if self.check:
            return
        for root, dirs, _files in os.walk(ETC, topdown=False):
            for d in dirs:
                path = os.path.join(root, d)
                if not os.listdir(path):
                    os.rmdir(path)
        try:
            os.rmdir(ETC)
        except OSError:  # not empty (a kept backup), or a mount point (a lab namespace's own /etc/sparkfab)
            pass

    def run(self):
        before = self.before()
        self.firewall()
        self.filter_table(before)
        self.ufw()
        self.units()
        self.nftables_conf()
        self.sysctls(before)
        self.links(before)
        self.netplan()
        for path in FILES:
            self.remove_file(path)
        self.etc()


def main():
    module = AnsibleModule(
        argument_spec={
            "netdevs": {"type": "list", "elements": "str", "required": True},
        },
        supports_check_mode=True,
    )
    r = Reset(module)
    try:
        r.run()
    except (OSError, RuntimeError) as exc:
        module.fail_json(msg=f"reset failed: {exc}", actions=r.actions)
    module.exit_json(
        changed=bool(r.actions),
        actions=r.actions,
        kept=r.kept,
        netplan_changed=r.netplan_changed,
        diff=r.diffs if module._diff else [],
    )


if __name__ == "__main__":
    main()
