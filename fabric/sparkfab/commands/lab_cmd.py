"""`sparkfab lab up|down|status|wire|exec|reboot INVENTORY ...`: one sub-command per action, each with its own flags."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from sparkfab import lock, paths
from sparkfab.commands.common import Verb, add_format, add_inventory, emit_json
from sparkfab.errors import Exit, LabError, Unavailable, UsageError
from sparkfab.lab import build, serving, wire
from sparkfab.lab import inventory as lab_inv
from sparkfab.lab.spec import LabSpec, spec
from sparkfab.lab.state import is_up
from sparkfab.plan import Plan
from sparkfab.resolve import load_plan


def _args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="build the cluster on this machine (root)", description="build the lab (root)")
    add_inventory(up)
    up.add_argument(
        "--engine",
        choices=serving.ENGINES,
        default=serving.ENGINES[0],
        help="what `serve` runs: vLLM's CPU build with the lab's model (default), or the collective workload",
    )
    up.add_argument(
        "--keep-ray",
        action="store_true",
        help="serve an instance planned on Ray with Ray (vLLM's CPU build then stops at its platform check: "
        "rehearses Ray's start order); by default the lab serves it with vLLM's own backend",
    )
    up.add_argument(
        "--shipped",
        choices=("lldpd", "bare", "nm"),
        default="lldpd",
        help="how the Sparks arrive: with lldpd as its package configures it (default), without it "
        "(apply installs it from the lab's mirror; discover needs nothing installed), or with NetworkManager "
        "rendering netplan as on Ubuntu 24.04 desktop and DGX OS (the inventory's netplan_renderer: NetworkManager)",
    )
    up.add_argument("--dry-run", action="store_true", help="print what `up` would create")
    up.set_defaults(lab_action=_up)
    down = sub.add_parser("down", help="remove everything the lab made, by its prefix")
    add_inventory(down)
    down.set_defaults(lab_action=_down)
    status = sub.add_parser("status", help="up or down, its processes, where each instance answers")
    add_inventory(status)
    add_format(status)
    status.set_defaults(lab_action=_status)
    wire_p = sub.add_parser("wire", help="rewire or shape a lab that is up (faults on purpose)")
    add_inventory(wire_p)
    what = wire_p.add_mutually_exclusive_group(required=True)
    what.add_argument("--swap", nargs=2, metavar=("CABLE", "CABLE"), help="swap two cables (cables[N])")
    what.add_argument("--cut", metavar="CABLE", help="cut a cable or one rail (cables[N] or cables[N].r1)")
    what.add_argument("--rate", nargs=2, metavar=("CABLE", "RATE"), help="shape a cable, e.g. cables[0] 1gbit")
    what.add_argument("--docker", metavar="HOST", help="restart a Spark's Docker (its FORWARD policy and chains anew)")
    wire_p.set_defaults(lab_action=_wire)
    run = sub.add_parser("exec", help="run COMMAND on a lab Spark (inside it: its processes, files and network)")
    add_inventory(run)
    run.add_argument(
        "--net-only",
        action="store_true",
        help="enter only the Spark's network namespace: this machine's programs and files, the Spark's "
        "netdevs and their counters (what bench's sampler needs)",
    )
    run.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="HOST [--] COMMAND",
        help="the Spark, then the command (put -- before a command with options)",
    )
    run.set_defaults(lab_action=_exec)
    boot = sub.add_parser("reboot", help="reboot a lab Spark (what is not persisted on its disk is gone)")
    add_inventory(boot)
    boot.add_argument("host", metavar="HOST", help="the Spark")
    boot.add_argument("--no-wait", action="store_true", help="return once the reboot has begun")
    boot.set_defaults(lab_action=_reboot)
    for sp in (up, down, status, wire_p, run, boot):
        # the verb's own -v/-q, given after the action too (SUPPRESS: the verb's value stands)
        sp.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more logging on stderr")
        sp.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="only errors on stderr")


def lab_cmd(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("pyroute2") is None:
        raise Unavailable("the lab needs pyroute2, which is not installed: pip install 'sparkfab[lab]'")
    plan = load_plan(args.inventory)
    handler: Callable[[argparse.Namespace, Plan, LabSpec], int] = args.lab_action  # each action's own
    return handler(args, plan, spec(plan))


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")


def _down(args: argparse.Namespace, plan: Plan, sp: LabSpec) -> int:
    cluster = plan.cluster
    t0 = time.perf_counter()
    state = paths.lab_paths(cluster).cluster_state
    if state.is_dir():  # a verb running against the lab ends before the lab goes
        with lock.taken_over(state, f"lab {cluster}", "lab down", _say):
            removed = build.down(cluster)
    else:
        removed = build.down(cluster)
    left = build.leftovers(cluster)
    if left:
        raise LabError("lab down left: " + ", ".join(left))
    sys.stderr.write(
        f"lab {cluster} down in {time.perf_counter() - t0:.2f} s: "
        + ", ".join(f"{v} {k}" for k, v in removed.items())
        + "\n"
    )
    return Exit.OK


def _status(args: argparse.Namespace, plan: Plan, sp: LabSpec) -> int:
    st = build.status(plan.cluster)
    st = replace(st, serving=_serving(plan, sp, st))
    if args.format == "json":
        emit_json(st.to_dict())
    else:
        sys.stdout.write(f"lab {st.cluster}: {'up' if st.up else 'down'}\n")
        for name, alive in st.processes.items():
            sys.stdout.write(f"  {name}: {'running' if alive else 'gone'}\n")
        for host, h in st.hosts.items():
            sys.stdout.write(f"  {host}: {h.ns} {h.mgmt_ip}\n")
        for name, s in st.serving.items():
            sys.stdout.write(f"  instance {name} (TP{s.tp}, {s.engine}): {s.url} model {s.model}\n")
    return Exit.OK if st.up else Exit.CHECK


def _serving(plan: Plan, sp: LabSpec, st: build.LabStatus) -> dict[str, build.Serving]:
    """Where each instance answers in the lab (rank 0's management address) and under what model name."""
    out = {}
    served = serving.of(st.engine).served_name(sp) if st.engine in serving.ENGINES else None
    for inst in plan.instances:
        head = st.hosts.get(inst.ranks[0].host)
        if head is None:
            continue
        out[inst.name] = build.Serving(
            url=f"http://{head.mgmt_ip}:{inst.port}",
            model=served,
            engine=st.engine,
            tp=inst.tp,
            head=inst.ranks[0].host,
        )
    return out


def _up(args: argparse.Namespace, plan: Plan, sp: LabSpec) -> int:
    sp = dataclasses.replace(sp, shipped=args.shipped)
    if args.dry_run:
        sys.stdout.write("\n".join(sp.describe()) + "\n")
        return Exit.OK
    engine = serving.of(args.engine)  # resolved once, carried as the object from here on
    engine.check_installed()
    lab_inv.check(args.inventory, sp, engine, plan)
    tps = {i.tp for i in plan.instances}
    state = build.up(sp, args.inventory, engine, plan.link_speed, tps, args.keep_ray)
    inv = lab_inv.write(args.inventory, sp, engine, plan=plan, keep_ray=args.keep_ray)
    t = state.timing
    parts = [f"links {t.get('links_s', 0):.1f} s", f"boot {t.get('boot_s', 0):.1f} s"]
    if t.get("image_s", 0) > 1:
        parts.insert(0, f"image built in {t['image_s']:.0f} s")
    if "image_import_s" in t:
        parts.append(f"container image into every Docker {t['image_import_s']:.1f} s")
    if "engine_cache_s" in t:
        filled, waited = t["engine_cache_s"], t["engine_cache_wait_s"]
        parts.append(f"engine's cache filled in {filled:.1f} s beside the boots (waited {waited:.1f} s)")
    sys.stderr.write(
        f"lab {sp.cluster} up in {t['total_s']:.1f} s ({len(sp.sparks)} booted Sparks, {len(sp.veths)} "
        f"fabric veths; {', '.join(parts)}); serving engine: {engine.name}\n"
        f"{wire.link_speed_text(sp, plan.link_speed)}\n"
    )
    for inst in plan.instances:
        served = engine.backend(inst.backend, args.keep_ray) if engine.serves_model else None
        if served != inst.backend and inst.backend:
            sys.stderr.write(
                f"instance {inst.name}: planned on {inst.backend}; the lab's {engine.name} build refuses it and "
                f"serves with {served} (`lab up --keep-ray` keeps Ray, to rehearse its start order)\n"
            )
    sys.stdout.write(f"{inv}\n")
    return Exit.OK


def _reboot(args: argparse.Namespace, plan: Plan, sp: LabSpec) -> int:
    """Reboot one lab Spark: its init goes down and up again, its network namespace is made anew;
    it returns when the Spark is ready: booted, and its fabric's addresses and routes back."""
    from sparkfab.lab import boot, machine, ready

    _up_here(args, sp)
    ms = {m.node.name: m for m in machine.machines(sp)}
    if args.host not in ms:
        raise UsageError(f"lab reboot: no Spark {args.host!r} in {sp.cluster} (Sparks: {', '.join(ms)})")
    m = ms[args.host]
    t0 = time.perf_counter()
    before = machine.init_pid(m)
    fabric = ready.fabric_state(lambda *argv: machine.run(m, *argv))
    machine.reboot(m)
    if args.no_wait:
        return Exit.OK
    deadline = time.monotonic() + boot.boot_s()
    while machine.init_pid(m) in (None, before) and time.monotonic() < deadline:
        time.sleep(0.2)
    boot.wait_booted(m, timeout=max(1.0, deadline - time.monotonic()))
    booted = time.perf_counter() - t0
    waited, missing = ready.wait_fabric(lambda *argv: machine.run(m, *argv), fabric)
    if missing:
        raise LabError(
            f"{args.host} booted in {booted:.1f} s, but {waited:.0f} s later its fabric still lacks what it held "
            f"before the reboot: {', '.join(sorted(missing))}"
        )
    what = f"; its fabric's {len(fabric)} addresses and routes back {waited:.1f} s after its boot" if fabric else ""
    sys.stderr.write(f"{args.host} rebooted in {time.perf_counter() - t0:.1f} s{what}\n")
    return Exit.OK


def _exec(args: argparse.Namespace, plan: Plan, sp: LabSpec) -> int:
    """Replace this process with COMMAND inside a lab Spark: every namespace of its init (its
    processes, files, systemd, Docker, lldpd, network), as `ssh` to it would give; with
    --net-only inside its network namespace alone (this machine's programs, the Spark's own
    /sys, so its fabric netdevs' counters are the ones `sample` and `bench --counters` read)."""
    words = list(args.command or [])
    net_only = args.net_only
    if words and words[0] == "--net-only":  # after the inventory, where the command's words begin
        net_only, words = True, words[1:]
    if len(words) < 2:
        raise UsageError("lab exec needs a host and a command: lab exec INVENTORY HOST COMMAND...")
    host, command = words[0], words[1:]
    if command[0] == "--":
        command = command[1:]
    names = [n.name for n in sp.sparks]
    if host not in names:
        raise UsageError(f"lab exec: no Spark {host!r} in {sp.cluster} (Sparks: {', '.join(names)})")
    _up_here(args, sp)
    if not command:
        raise UsageError("lab exec needs a command after the host")
    sys.stdout.flush()
    sys.stderr.flush()
    if net_only:
        os.execvp("ip", ["ip", "netns", "exec", sp.node(host).ns, *command])
    from sparkfab.lab import machine

    pid = machine.init_pid(next(m for m in machine.machines(sp) if m.node.name == host))
    if pid is None:
        raise UsageError(f"lab exec: {host} is not running (lab status {args.inventory} says why)")
    os.execvp("nsenter", ["nsenter", "-t", str(pid), "-a", *command])


def _up_here(args: argparse.Namespace, sp: LabSpec) -> None:
    """The lab is up (`is_up`: namespaces of the same name that no lab up of this lab directory
    finished are not ours to rewire)."""
    if not is_up(sp.cluster):
        raise UsageError(f"lab {sp.cluster} is not up: run `sparkfab lab up {args.inventory}` first")


def _wire(args: argparse.Namespace, plan: Plan, sp: LabSpec) -> int:
    _up_here(args, sp)
    if args.swap:
        lines = wire.swap(sp, *args.swap)
    elif args.cut:
        lines = wire.cut(sp, args.cut)
    elif args.rate:
        lines = wire.rate(sp, *args.rate)
    else:
        lines = wire.docker(sp, args.docker)
    sys.stdout.write("\n".join(lines) + "\n")
    return Exit.OK


VERBS = (
    Verb("lab", "Rehearse a cluster on this machine: booted Sparks (systemd, Docker) joined by veths.", _args, lab_cmd),
)
