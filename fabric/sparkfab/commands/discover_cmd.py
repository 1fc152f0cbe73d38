"""`sparkfab discover`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb, add_format
from sparkfab.connection import Become, connect
from sparkfab.discover import Discovery, discover
from sparkfab.discover.hosts import SWITCH_WAIT_S
from sparkfab.discover.inventory import merge, problems
from sparkfab.errors import Exit, Unavailable, UsageError, readable
from sparkfab.files.outputs import check_file, write_file
from sparkfab.verify.lldp import known_switches


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "hosts", nargs="*", metavar="HOST", type=at.host_name, help="management addresses (or names) of the Sparks"
    )
    p.add_argument("--inventory", help="discover the Sparks of this inventory and merge the cables into it")
    p.add_argument("--lab", action="store_true", help="reach the Sparks of --inventory through its lab")
    p.add_argument(
        "-l",
        "--limit",
        help="--inventory: only the Sparks this Ansible pattern selects (a replaced one); the others are not "
        "contacted, a far end is one of them by the name it announces, and their cables are kept as written",
    )
    p.add_argument("--ssh-config", help="ssh_config for HOSTS (user, key, known_hosts)")
    become = p.add_mutually_exclusive_group()
    become.add_argument(
        "--become-password-file",
        metavar="FILE",
        help="HOSTS: the password sudo asks the login for (its first line), as Ansible's become password",
    )
    become.add_argument(
        "-K", "--ask-become-pass", action="store_true", help="HOSTS: ask for the password sudo asks the login for"
    )
    p.add_argument("--cluster", default="discovered", help="cluster name of a new inventory")
    p.add_argument(
        "--link-speed",
        choices=("200", "100e", "100"),
        default="200",
        help="a new inventory's link speed: how many legs a switch port breaks out into (default 200)",
    )
    p.add_argument(
        "--settle", type=at.number(0, 120), default=2.5, help="seconds to let LLDP announce after bringing ports up"
    )
    p.add_argument(
        "--wait",
        type=at.number(0, 600),
        default=SWITCH_WAIT_S,
        help=f"the longest a port that has heard no one is listened to (default {SWITCH_WAIT_S:.0f} s: a switch "
        "announces every 30 s as shipped; Sparks are heard at once)",
    )
    p.add_argument("-o", "--output", type=at.file_path, help="write the inventory to this new file (default stdout)")
    add_format(p, "yaml", "json")


def discover_cmd(args: argparse.Namespace) -> int:
    if bool(args.hosts) == bool(args.inventory):
        raise UsageError("give the Sparks' addresses, or --inventory FILE (not both)")
    if args.limit and not args.inventory:
        raise UsageError("--limit selects Sparks of --inventory; with addresses, give only those to discover")
    out = check_file(args.output, [x for x in (args.inventory,) if x]) if args.output else None
    if args.ssh_config and not Path(args.ssh_config).is_file():
        raise Unavailable(f"--ssh-config {args.ssh_config}: no such file")
    raw_text, result, cluster, asked = _of_inventory(args) if args.inventory else _of_hosts(args)
    for line in result.odd:
        sys.stderr.write(readable(f"odd: {line}") + "\n")
    text = (
        json.dumps(result.to_dict(), indent=2) + "\n"
        if args.format == "json"
        else _inventory(raw_text, result, cluster, asked)
    )
    if out:
        write_file(out, text)
        sys.stderr.write(f"wrote {len(result.cables)} cables to {out}\n")
    else:
        sys.stdout.write(text)
    return Exit.CHECK if result.odd else Exit.OK


def _of_inventory(args: argparse.Namespace) -> tuple[str | None, Discovery, str, set[str] | None]:
    """The Sparks of --inventory (those its --limit selects): (the inventory's text to merge
    into, what was found, the cluster, the Sparks asked where a --limit chose them)."""
    from sparkfab.cluster.limits import files_here
    from sparkfab.cluster.target import Target
    from sparkfab.inventory import is_plain_file

    if args.format != "json" and not is_plain_file(args.inventory):
        raise UsageError(
            f"{args.inventory}: discover merges the cables into a single-file inventory; for this one "
            "use --format json and write the cables where its sparkfab block is"
        )
    raw_text = Path(args.inventory).read_text() if args.format != "json" else None
    target = Target.load(args.inventory, lab=args.lab)
    plan = target.plan
    conn = target.connection("discover")
    chosen = target.limited(files_here(args.limit))
    asked = [h for h in plan.hosts if chosen is None or h.name in chosen]
    targets = [(h.name, h.mgmt_address, conn.remote(h.name)) for h in asked]
    beyond = frozenset(h.name for h in plan.hosts) - {h.name for h in asked}
    # where the inventory cables an asked Spark to one left out: that one is not asked its name
    planned = {(h.name, i.netdev): str(i.peer_host) for h in asked for i in h.ifaces if i.peer_host in beyond}
    result = discover(
        targets,
        args.settle,
        patience_s=args.wait,
        known=known_switches(plan),
        mode=plan.link_speed,
        beyond=beyond,
        log=_say(args),
        planned=planned,
    )
    if chosen is not None:
        sys.stderr.write(f"discover: {len(asked)} of {len(plan.hosts)} Sparks (--limit {args.limit})\n")
    return raw_text, result, plan.cluster, chosen


def _of_hosts(args: argparse.Namespace) -> tuple[None, Discovery, str, None]:
    """The Sparks at the addresses given, reached through --ssh-config, named by hostname."""
    if not args.ssh_config:
        raise UsageError("HOSTS need --ssh-config (user, key and known_hosts to reach them)")
    become = Become("sudo", _become_password(args))
    targets = [(h, h, connect(h, args.ssh_config)) for h in args.hosts]
    for _, _, th in targets:
        th.sparkfab_become = become  # an inventory gives its own; here the flags say
    found = discover(targets, args.settle, by_hostname=True, patience_s=args.wait, mode=args.link_speed, log=_say(args))
    return None, found, args.cluster, None


def _say(args: argparse.Namespace) -> Callable[[str], None]:
    """discover's progress on stderr (what it waits for), unless -q."""

    def say(line: str) -> None:
        if not args.quiet:
            sys.stderr.write(line + "\n")

    return say


def _inventory(raw_text: str | None, result: Discovery, cluster: str, asked: set[str] | None) -> str:
    """The inventory with the cables found (`asked`: the Sparks a --limit chose; the others'
    cables kept); what validate would refuse in it is said and counts as odd (never a written
    inventory that validate refuses behind an exit status of 0)."""
    text = merge(raw_text, result, cluster, asked)
    for line in problems(text):
        sys.stderr.write(readable(f"odd: the inventory written is not valid yet: {line}") + "\n")
        result.odd.append(f"the inventory written is not valid yet: {line}")
    return text


def _become_password(args: argparse.Namespace) -> str | None:
    """The password sudo asks for, from --become-password-file or asked for (-K); None: sudo -n."""
    if args.become_password_file:
        from sparkfab.files import userfile

        lines = userfile.read_text(args.become_password_file, "become password file", 4096).splitlines()
        if not lines or not lines[0]:
            raise UsageError(f"--become-password-file {args.become_password_file}: the first line is empty")
        return lines[0]
    if args.ask_become_pass:
        import getpass

        if not sys.stdin.isatty():
            raise UsageError("-K asks on a terminal: without one, give --become-password-file FILE")
        return getpass.getpass("BECOME password: ")
    return None


VERBS = (
    Verb("discover", "Read the cabling over LLDP and write it as the cables of an inventory.", _args, discover_cmd),
)
