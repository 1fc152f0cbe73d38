"""`sparkfab lab up|down|status|wire|exec`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from sparkfab.cli import command, emit_json
from sparkfab.errors import Exit, LabError, UsageError
from sparkfab.lab import build, wire
from sparkfab.lab import engine as lab_engine
from sparkfab.lab import inventory as lab_inventory
from sparkfab.lab.spec import spec
from sparkfab.resolve import load_plan


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("up", "down", "status", "wire", "exec"))
    p.add_argument("inventory", metavar="INVENTORY")
    p.add_argument(
        "command",
        nargs="*",
        metavar="HOST [--] COMMAND",
        help="exec: run COMMAND on a lab Spark, in its network namespace (put -- before a command with options)",
    )
    p.add_argument(
        "--engine",
        choices=lab_engine.ENGINES,
        default="vllm",
        help="up: what `serve` runs: vLLM's CPU build with the lab's model (default), or the collective workload",
    )
    p.add_argument("--dry-run", action="store_true", help="print what `up` would create")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--swap", nargs=2, metavar=("CABLE", "CABLE"), help="wire: swap two cables (cables[N])")
    p.add_argument("--cut", metavar="CABLE", help="wire: cut a cable or one rail (cables[N] or cables[N].r1)")
    p.add_argument("--rate", nargs=2, metavar=("CABLE", "RATE"), help="wire: shape a cable, e.g. cables[0] 1gbit")
    p.add_argument(
        "--docker", metavar="HOST", help="wire: Docker's FORWARD policy (DROP) and DOCKER-USER chain on a Spark"
    )


@command("lab", "Rehearse a cluster on this machine: namespaces, veths, bridges, sshd, networkd, lldpd.", _args)
def lab_cmd(args: argparse.Namespace) -> int:
    plan = load_plan(args.inventory)
    sp = spec(plan)
    if args.action == "exec":
        return _exec(args, sp)
    if args.command:
        raise UsageError(f"lab {args.action} takes no command (only `lab exec INVENTORY HOST COMMAND...`)")
    if args.action == "up":
        return _up(args, sp, plan.link_speed)
    if args.action == "down":
        return _down(plan.cluster)
    if args.action == "status":
        return _status(args, plan, sp)
    return _wire(args, sp)


def _down(cluster: str) -> int:
    t0 = time.perf_counter()
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


def _status(args: argparse.Namespace, plan, sp) -> int:  # type: ignore[no-untyped-def]
    st = build.status(plan.cluster)
    st["serving"] = _serving(plan, sp, st)
    if args.format == "json":
        emit_json(st)
    else:
        sys.stdout.write(f"lab {st['cluster']}: {'up' if st['up'] else 'down'}\n")
        for name, alive in st["processes"].items():
            sys.stdout.write(f"  {name}: {'running' if alive else 'gone'}\n")
        for host, h in st["hosts"].items():
            sys.stdout.write(f"  {host}: {h['ns']} {h['mgmt_ip']}\n")
        for name, s in st["serving"].items():
            sys.stdout.write(f"  instance {name} (TP{s['tp']}, {s['engine']}): {s['url']} model {s['model']}\n")
    return Exit.OK if st["up"] else Exit.CHECK


def _serving(plan, sp, st: dict) -> dict:  # type: ignore[no-untyped-def, type-arg]
    """Where each instance answers in the lab (rank 0's management address) and under what model name."""
    engine = st.get("engine")
    out = {}
    for inst in plan.instances:
        head = st["hosts"].get(inst.ranks[0].host)
        if head is None:
            continue
        out[inst.name] = {
            "url": f"http://{head['mgmt_ip']}:{inst.port}",
            "model": lab_engine.served_name(sp) if engine == "vllm" else None,
            "engine": engine,
            "tp": inst.tp,
            "head": inst.ranks[0].host,
        }
    return out


def _up(args: argparse.Namespace, sp, mode: str) -> int:  # type: ignore[no-untyped-def]
    if args.dry_run:
        sys.stdout.write("\n".join(sp.describe()) + "\n")
        return Exit.OK
    lab_engine.check(args.engine)
    state = build.up(sp)
    try:
        t0 = time.perf_counter()
        lab_engine.install(sp, args.engine)
        t_engine = time.perf_counter() - t0
        shaped = wire.link_speed(sp, mode)
    except Exception:
        build.down(sp.cluster)
        raise
    state["engine"] = args.engine
    (sp.dir / "state.json").write_text(json.dumps(state, indent=2))
    inv = lab_inventory.write(args.inventory, sp, args.engine)
    t = state["timing"]
    made = f"; the lab's model in {t_engine:.1f} s" if args.engine == "vllm" else ""
    sys.stderr.write(
        f"lab {sp.cluster} up in {t['total_s']:.2f} s ({len(sp.sparks)} Sparks, {len(sp.veths)} "
        f"fabric veths; links {t['links_s']:.2f} s{made}); serving engine: {args.engine}\n{shaped}\n"
    )
    sys.stdout.write(f"{inv}\n")
    return Exit.OK


def _exec(args: argparse.Namespace, sp) -> int:  # type: ignore[no-untyped-def]
    """Replace this process with COMMAND inside a lab Spark's network namespace (its own /sys,
    so its fabric netdevs' counters are the ones `sample` and `bench --counters` read)."""
    if not args.command or len(args.command) < 2:
        raise UsageError("lab exec needs a host and a command: lab exec INVENTORY HOST COMMAND...")
    host, command = args.command[0], args.command[1:]
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
    os.execvp("ip", ["ip", "netns", "exec", sp.node(host).ns, *command])


def _up_here(args: argparse.Namespace, sp) -> None:  # type: ignore[no-untyped-def]
    """The lab is up, and it is the one this lab directory describes (namespaces of the same name
    that another lab directory made are not ours to rewire)."""
    if not build.existing_namespaces(sp.cluster) or not (sp.dir / "state.json").is_file():
        raise UsageError(f"lab {sp.cluster} is not up: run `sparkfab lab up {args.inventory}` first")


def _wire(args: argparse.Namespace, sp) -> int:  # type: ignore[no-untyped-def]
    _up_here(args, sp)
    if args.swap:
        lines = wire.swap(sp, *args.swap)
    elif args.cut:
        lines = wire.cut(sp, args.cut)
    elif args.rate:
        lines = wire.rate(sp, *args.rate)
    elif args.docker:
        lines = wire.docker(sp, args.docker)
    else:
        raise UsageError("lab wire needs --swap, --cut, --rate or --docker")
    sys.stdout.write("\n".join(lines) + "\n")
    return Exit.OK
