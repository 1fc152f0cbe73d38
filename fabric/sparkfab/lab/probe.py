"""Why a lab Spark does not answer ssh, as the lab host sees it: whether its machine runs, whether
its management port holds its address, whether anything listens on port 22 in its namespace,
which of its firewall's input rules drop, and what this host's neighbour table says of it.

On hardware an unreachable Spark is for the operator to walk to; in the lab every one of these is
a file or a namespace away, so a run that finds a lab Spark unreachable says them with the error.
Reading only: nothing here changes the lab."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

from sparkfab import proc
from sparkfab.lab import boot, machine
from sparkfab.lab.spec import LabSpec


def unreachable(spec: LabSpec, host: str) -> str:
    """One line: what the lab host sees of `host` (a Spark of `spec`)."""
    node = spec.node(host)
    m = next(x for x in machine.machines(spec) if x.node.name == host)
    net = ["nsenter", f"--net=/run/netns/{node.ns}"]
    said = [_machine(m), _port(net, node.mgmt_if, node.mgmt_ip), _listening(net), _drops(net), _neighbour(node.mgmt_ip)]
    return "; ".join(said)


def _machine(m: machine.Machine) -> str:
    pid = machine.init_pid(m)
    if pid is not None:
        return f"its machine runs (init {pid})"
    last = boot.console_tail(m, lines=1).strip()
    return f"its machine does not run (console: {m.log}; it ends: {last or 'nothing'})"


def _json(argv: list[str]) -> Any:
    try:
        res = proc.run(argv, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if res.returncode != 0:
        return (res.stderr or res.stdout).strip() or f"exit {res.returncode}"
    try:
        return json.loads(res.stdout or "null")
    except json.JSONDecodeError:
        return res.stdout.strip()


def _port(net: list[str], ifname: str, ip: str) -> str:
    links = _json([*net, "ip", "-j", "addr", "show", "dev", ifname])
    if not isinstance(links, list) or not links:
        return f"its management port {ifname} cannot be read ({links})"
    link = links[0]
    held = [a.get("local") for a in link.get("addr_info", []) if a.get("family") == "inet"]
    where = f"{ip} is on {ifname}" if ip in held else f"{ifname} lacks {ip} (it holds {', '.join(held) or 'no IPv4'})"
    return f"{where}, {link.get('operstate', '?')}"


def _listening(net: list[str]) -> str:
    try:
        res = proc.run([*net, "ss", "-Hltnp", "sport = :22"], check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"its sockets cannot be read ({exc})"
    if res.returncode != 0:
        return f"its sockets cannot be read ({res.stderr.strip()})"
    if not res.stdout.strip():
        return "nothing listens on port 22"
    names = sorted(set(re.findall(r'\(\("([^"]+)"', res.stdout)))
    return f"{', '.join(names) or 'a process'} listens on port 22"


def _drops(net: list[str]) -> str:
    """The base chains on the input hook that drop (their policy, or a rule with drop or reject);
    a rule in a chain they jump to is not followed."""
    doc = _json([*net, "nft", "-j", "list", "ruleset"])
    if not isinstance(doc, dict):
        return f"its firewall cannot be read ({doc})"
    items = doc.get("nftables", [])
    inputs = {
        (c["family"], c["table"], c["name"]): c.get("policy")
        for c in (i["chain"] for i in items if "chain" in i)
        if c.get("hook") == "input"
    }
    found = [f"{f} {t} {n}: policy drop" for (f, t, n), policy in inputs.items() if policy == "drop"]
    for rule in (i["rule"] for i in items if "rule" in i):
        key = (rule["family"], rule["table"], rule["chain"])
        if key in inputs and any("drop" in e or "reject" in e for e in rule.get("expr", [])):
            found.append(f"{key[0]} {key[1]} {key[2]}: a rule that drops (handle {rule.get('handle')})")
    return f"its firewall's input drops: {', '.join(found)}" if found else "its firewall drops nothing on input"


def _neighbour(ip: str) -> str:
    found = _json(["ip", "-j", "neigh", "show", "to", ip])
    if not isinstance(found, list):
        return f"this host's neighbour table cannot be read ({found})"
    states = [f"{n.get('lladdr', 'no address')} {'/'.join(n.get('state', []))}" for n in found]
    return f"this host's neighbour entry: {', '.join(states) or 'none'}"
