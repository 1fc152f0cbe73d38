"""`sparkfab peer-ssh`: Spark-to-Spark ssh for mpirun (`verify --perf`'s nccl-tests), by a play."""

from __future__ import annotations

import argparse

from rich.console import Console

from sparkfab.cluster.limits import files_here, selected
from sparkfab.cluster.target import Target
from sparkfab.commands.common import Verb, add_changes, add_target
from sparkfab.commands.runs import confirm, fail_if, run_options, run_with_progress
from sparkfab.errors import Exit
from sparkfab.plan import Plan

_err = Console(stderr=True, width=140)


def _args(p: argparse.ArgumentParser) -> None:
    add_target(p)
    add_changes(p, check="change nothing; report what would change", diff="show file differences")


def peers(plan: Plan) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Each multi-rank instance's rank 0 -> its other ranks, and those ranks' management
    addresses (how mpirun's -H names them)."""
    heads = {inst.hosts[0]: list(inst.hosts[1:]) for inst in plan.instances if len(inst.hosts) > 1}
    addresses = {h: plan.host(h).mgmt_address for others in heads.values() for h in others}
    return heads, addresses


def peer_ssh_cmd(args: argparse.Namespace) -> int:
    with Target.held(args.inventory, "peer-ssh", lab=args.lab) as target:
        plan = target.plan
        heads, addresses = peers(plan)
        if not heads:
            _err.print(f"peer-ssh {plan.cluster}: no instance of more than one Spark: nothing to do")
            return Exit.OK
        tree = target.render()
        limit = files_here(args.limit)
        opts = run_options(args)
        confirm(target, args, "peer-ssh", selected(plan, tree, limit))
        extra: dict[str, object] = {"sparkfab_peer_ssh": heads, "sparkfab_peer_addresses": addresses}
        result = run_with_progress("peer_ssh.yml", target, tree, opts, extra, limit=limit)
        changed = sum(h.changed for h in result.hosts.values())
        _err.print(
            f"peer-ssh {'(check) ' if args.check else ''}{plan.cluster}: changed={changed} "
            f"failed={len(result.failures)} ({', '.join(f'{h} -> {len(o)} ranks' for h, o in heads.items())})"
        )
        fail_if(result, target)
        return Exit.OK


VERBS = (
    Verb(
        "peer-ssh",
        "Let each instance's rank 0 reach its other ranks over ssh (mpirun, verify --perf): a key, accepted, known.",
        _args,
        peer_ssh_cmd,
    ),
)
