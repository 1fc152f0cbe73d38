"""`sparkfab lab up|down|status|wire`."""

from __future__ import annotations

import argparse
import sys
import time

from sparkfab.cli import command, emit_json
from sparkfab.errors import LabError, UsageError
from sparkfab.inventory import load_roundtrip
from sparkfab.lab import build, wire
from sparkfab.lab.inventory import lab_inventory
from sparkfab.lab.spec import spec
from sparkfab.resolve import load_plan


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("up", "down", "status", "wire"))
    p.add_argument("inventory", metavar="INVENTORY")
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
    if args.action == "up":
        return _up(args, sp)
    if args.action == "down":
        t0 = time.perf_counter()
        removed = build.down(plan.cluster)
        left = build.leftovers(plan.cluster)
        if left:
            raise LabError("lab down left: " + ", ".join(left))
        sys.stderr.write(
            f"lab {plan.cluster} down in {time.perf_counter() - t0:.2f} s: "
            + ", ".join(f"{v} {k}" for k, v in removed.items())
            + "\n"
        )
        return 0
    if args.action == "status":
        st = build.status(plan.cluster)
        if args.format == "json":
            emit_json(st)
        else:
            sys.stdout.write(f"lab {st['cluster']}: {'up' if st['up'] else 'down'}\n")
            for name, alive in st["processes"].items():
                sys.stdout.write(f"  {name}: {'running' if alive else 'gone'}\n")
            for host, h in st["hosts"].items():
                sys.stdout.write(f"  {host}: {h['ns']} {h['mgmt_ip']}\n")
        return 0 if st["up"] else 4
    return _wire(args, sp)


def _up(args: argparse.Namespace, sp) -> int:  # type: ignore[no-untyped-def]
    if args.dry_run:
        sys.stdout.write("\n".join(sp.describe()) + "\n")
        return 0
    state = build.up(sp)
    inv = sp.dir / "inventory.yml"
    inv.write_text(lab_inventory(load_roundtrip(args.inventory), sp))
    t = state["timing"]
    sys.stderr.write(
        f"lab {sp.cluster} up in {t['total_s']:.2f} s ({len(sp.sparks)} Sparks, {len(sp.veths)} "
        f"fabric veths; links {t['links_s']:.2f} s)\n"
    )
    sys.stdout.write(f"{inv}\n")
    return 0


def _wire(args: argparse.Namespace, sp) -> int:  # type: ignore[no-untyped-def]
    if not build.existing_namespaces(sp.cluster):
        raise UsageError(f"lab {sp.cluster} is not up: run `sparkfab lab up {args.inventory}` first")
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
    return 0
