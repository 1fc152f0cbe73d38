"""The cluster as a picture: Graphviz's DOT language for a Plan, laid out by Graphviz itself
(`dot`), never by hand.

Each Spark is a box with its ports (p0, p1) and each port's two PCIe twins (netdev, address);
each switch a box with the breakout lanes its cables use, named as its OS names them. A cable is
one edge per twin, labelled with its rail, subnet and the link speed of the run's mode. Given
verify's results, an edge is green where every check of its netdevs passed, red where one failed
(the failing checks named on the edge), grey where nothing was checked.

Pure: text in, text out. Every name in the picture comes from the inventory or the plan, and is
written as an HTML-escaped label (a DOT label is markup).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparkfab import spark
from sparkfab.plan import Host, Iface, Plan

PASS_COLOUR, FAIL_COLOUR, NONE_COLOUR = "#2e7d32", "#c62828", "#607d8b"


@dataclass(frozen=True)
class Verdict:
    """What verify said of one netdev: failed checks (empty: all passed)."""

    failed: tuple[str, ...] = ()


def verdicts(results: Iterable[Mapping[str, object]]) -> dict[tuple[str, str], Verdict]:
    """verify's JSON rows -> (host, netdev) -> its verdict (a row names a netdev first in its subject)."""
    failed: dict[tuple[str, str], list[str]] = {}
    for r in results:
        host, subject = str(r.get("host", "")), str(r.get("subject", ""))
        netdev = subject.split(" ")[0]
        if not spark.port_of(netdev):
            continue
        key = (host, netdev)
        failed.setdefault(key, [])
        if r.get("status") == "fail":
            check = str(r.get("check", "?"))
            if check not in failed[key]:
                failed[key].append(check)
    return {k: Verdict(tuple(v)) for k, v in failed.items()}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _spark(host: Host) -> str:
    """A Spark: its name, its rank, and a cell per cabled port listing the port's PCIe twins."""
    head = f'<TR><TD COLSPAN="2" BGCOLOR="#263238"><FONT COLOR="white"><B>{_e(host.name)}</B></FONT></TD></TR>'
    rank = f'<TR><TD COLSPAN="2">rank {host.rank} of {_e(host.instance)}</TD></TR>' if host.rank is not None else ""
    cells = ""
    for port in ("p0", "p1"):
        twins = "".join(
            f'<BR/><FONT POINT-SIZE="8">{_e(i.netdev)} {_e(i.address)}</FONT>' for i in host.ifaces if i.port == port
        )
        cells += f'<TD PORT="{port}" BGCOLOR="#eceff1"><B>{port}</B>{twins}</TD>' if twins else ""
    table = f"{head}{rank}<TR>{cells}</TR>"
    return (
        f'  "{_e(host.name)}" [shape=plain label=<<TABLE BORDER="1" CELLBORDER="1" CELLSPACING="0">{table}</TABLE>>];'
    )


def _switch(plan: Plan, name: str, lanes: list[Iface]) -> str:
    sw = plan.switch(name)
    title = f"{_e(name)} ({_e(sw.model)}, {_e(sw.os)})"
    seen: dict[str, Iface] = {}
    for i in lanes:
        seen.setdefault(i.switch_port or "", i)
    cells = "".join(
        f'<TD PORT="{_e(p)}">{_e(p)}<BR/><FONT POINT-SIZE="9">{_e(i.switch_port_id or "")}</FONT></TD>'
        for p, i in sorted(seen.items(), key=lambda kv: [int(x) for x in kv[0].split("/") if x.isdigit()])
    )
    head = (
        f'<TR><TD COLSPAN="{max(1, len(seen))}" BGCOLOR="#37474f"><FONT COLOR="white"><B>{title}</B></FONT></TD></TR>'
    )
    table = f"{head}<TR>{cells}</TR>"
    return f'  "sw:{_e(name)}" [shape=plain label=<<TABLE BORDER="1" CELLBORDER="1" CELLSPACING="0">{table}</TABLE>>];'


def _colour(verdict: list[Verdict | None]) -> tuple[str, str]:
    """(colour, what failed) of an edge from its ends' verdicts."""
    known = [v for v in verdict if v is not None]
    if not known:
        return NONE_COLOUR, ""
    failed = sorted({c for v in known for c in v.failed})
    return (FAIL_COLOUR, ", ".join(failed)) if failed else (PASS_COLOUR, "")


def _edge(a: str, b: str, label: str, colour: str, failed: str) -> str:
    text = label + (f"\\nFAILED: {failed}" if failed else "")
    width = "2.5" if failed else "1.5"
    return f'  {a} -> {b} [dir=none color="{colour}" fontcolor="{colour}" penwidth={width} label="{_e(text)}"];'


def _cables(plan: Plan) -> dict[int, list[tuple[Host, Iface]]]:
    """Every cable's netdevs (both twins at each end), by cable index."""
    out: dict[int, list[tuple[Host, Iface]]] = {}
    for h in plan.hosts:
        for i in h.ifaces:
            out.setdefault(i.cable, []).append((h, i))
    return out


def dot(plan: Plan, results: Mapping[tuple[str, str], Verdict] | None = None) -> str:
    """The DOT text of `plan`'s cluster, coloured by verify's `results` where given: one edge per
    cable, from a Spark's port to the far Spark's port or the switch's lane, labelled with the
    cable, its rails and their subnets."""
    results = results or {}
    speed = spark.SPEEDS[plan.link_speed].text
    switched = any(i.switch for h in plan.hosts for i in h.ifaces)
    lines = [
        f'digraph "{_e(plan.cluster)}" {{',
        f'  graph [rankdir={"TB" if switched else "LR"} nodesep=0.6 ranksep=1.2 fontname="DejaVu Sans" '
        f'labelloc=t label="{_e(plan.cluster)}: {_e(speed)}, {len(plan.hosts)} Sparks"];',
        '  node [fontname="DejaVu Sans" fontsize=11]; edge [fontname="DejaVu Sans" fontsize=9];',
    ]
    lines += [_spark(h) for h in plan.hosts]
    lanes: dict[str, list[Iface]] = {}
    for h in plan.hosts:
        for i in h.ifaces:
            if i.switch:
                lanes.setdefault(i.switch, []).append(i)
    lines += [_switch(plan, name, ifs) for name, ifs in sorted(lanes.items())]
    for index, ends in sorted(_cables(plan).items()):
        h, i = ends[0]
        rails = ", ".join(sorted({f"{x.rail} {x.subnet}" for _, x in ends}))
        colour, failed = _colour([results.get((x.name, y.netdev)) for x, y in ends] if results else [])
        near = f'"{_e(h.name)}":"{i.port}"'
        if i.switch:  # Sparks above, the switch below: each cable leaves a port down into its lane
            near += ":s"
            far = f'"sw:{_e(i.switch)}":"{_e(i.switch_port)}":n'
        else:
            far = f'"{_e(i.peer_host)}":"{_e(i.peer_port)}"'
        lines.append(_edge(near, far, f"cables[{index}]\\n{rails}", colour, failed))
    lines.append("}")
    return "\n".join(lines) + "\n"
