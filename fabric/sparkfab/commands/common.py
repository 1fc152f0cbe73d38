"""What every verb module shares: the `Verb` record it exports, the argument groups several
verbs take (so one flag means one thing everywhere), and JSON output.

A verb module exports `VERBS`, a tuple of `Verb`; `sparkfab.cli` lists the modules by name.
Nothing here imports a verb module or the CLI, so the command layer has no circle.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkfab.errors import UsageError

if TYPE_CHECKING:
    from sparkfab.plan import Plan

Handler = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Verb:
    name: str
    help: str
    setup: Setup
    handler: Handler


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def add_inventory(p: argparse.ArgumentParser, help_text: str = "the cluster inventory") -> None:
    """INVENTORY, or -i as Ansible takes it, or ANSIBLE_INVENTORY / ansible.cfg's `inventory`
    (`inventory_source` picks the one), and the vault password Ansible opens it with."""
    p.add_argument("inventory", metavar="INVENTORY", nargs="?", help=f"{help_text} (file or directory)")
    p.add_argument(
        "-i",
        "--inventory",
        dest="inventory_opts",
        action="append",
        default=[],
        metavar="INVENTORY",
        help="the inventory, as Ansible's -i (default: ANSIBLE_INVENTORY, then ansible.cfg's inventory)",
    )
    p.add_argument(
        "--vault-password-file",
        metavar="FILE",
        help="opens the inventory's vaults (as ANSIBLE_VAULT_PASSWORD_FILE; the runs get it too)",
    )


def inventory_source(args: argparse.Namespace, environ: dict[str, str], cwd: Path) -> str | None:
    """The one inventory a verb reads: INVENTORY or -i, else ANSIBLE_INVENTORY, else ansible.cfg's
    `inventory` (as Ansible finds it); None for a verb that takes none."""
    if not hasattr(args, "inventory_opts"):
        return getattr(args, "inventory", None)
    given = [x for x in [args.inventory, *args.inventory_opts] if x]
    if not given and environ.get("ANSIBLE_INVENTORY"):
        given = [x.strip() for x in environ["ANSIBLE_INVENTORY"].split(",") if x.strip()]
    if not given:
        given = _configured_inventory(environ, cwd)
    if len(given) > 1:
        raise UsageError(
            f"sparkfab reads one inventory source, here are {len(given)} ({', '.join(given)}): "
            "put their files in one inventory directory"
        )
    if not given:
        raise UsageError(
            "an inventory is needed: INVENTORY, -i INVENTORY, ANSIBLE_INVENTORY or ansible.cfg's inventory"
        )
    return given[0]


def _configured_inventory(environ: dict[str, str], cwd: Path) -> list[str]:
    import os

    from sparkfab.inventory.ansiblecfg import read_users_config

    cfg = read_users_config(environ, cwd)
    if cfg is None:
        return []
    text = cfg.value("defaults", "inventory")
    return [str(cfg.path.parent / os.path.expanduser(x.strip())) for x in text.split(",") if x.strip()]


def add_lab(p: argparse.ArgumentParser, help_text: str = "use the lab inventory of this cluster") -> None:
    p.add_argument("--lab", action="store_true", help=help_text)


def add_target(p: argparse.ArgumentParser) -> None:
    """INVENTORY and --lab: a verb that reaches the hosts of a cluster (`sparkfab.cluster.target`)."""
    add_inventory(p)
    add_lab(p)


#: how long a verb's Ansible run may take in all unless --timeout says (a task has 600 s: ansible.cfg)
RUN_TIMEOUT_S = 3600.0
#: a task's own bound (ansible.cfg's task_timeout): what a start wave may take before the health wait
TASK_TIMEOUT_S = 600.0


def run_bound(plan: Plan) -> float:
    """The whole run's bound of a verb that starts engines: never shorter than the longest health
    wait of its instances after the stop and the start waves (a task's bound each), so that the
    health wait runs out first, with its own message and the engine log's last lines."""
    waits = [i.recipe.health_wait for i in plan.instances if i.recipe is not None]
    return max(RUN_TIMEOUT_S, max(waits, default=0) + 3 * TASK_TIMEOUT_S)


def add_changes(
    p: argparse.ArgumentParser,
    *,
    limit: str = "only these hosts (Ansible pattern)",
    check: str | None = None,
    diff: str | None = None,
    starts_engines: bool = False,
) -> None:
    """The flags of a verb that changes hosts: -y, --limit, and --check/--diff where it previews."""
    from sparkfab.commands import argtypes as at

    p.add_argument("-y", "--yes", action="store_true", help="do not ask before changing real hosts")
    p.add_argument("-l", "--limit", help=limit)
    add_passthrough(p)
    default = (
        f"default: the longest health wait of the cluster's engines plus {3 * TASK_TIMEOUT_S:.0f}, at least "
        f"{RUN_TIMEOUT_S:.0f}"
        if starts_engines
        else f"default {RUN_TIMEOUT_S:.0f}"
    )
    p.add_argument(
        "--timeout",
        type=at.number(0, 7 * 86400, lo_open=True),
        default=None if starts_engines else RUN_TIMEOUT_S,
        metavar="SECONDS",
        help=f"the whole run's bound ({default}); past it the run ends, naming each host's step",
    )
    if check:
        p.add_argument("--check", action="store_true", help=check)
    if diff:
        p.add_argument("--diff", action="store_true", help=diff)


#: the attribute a flag's action carries when its values are not argparse choices (a comma
#: list, as --tags takes): what `sparkfab completion` offers after it, {value: what it means}
VALUES = "sparkfab_values"


def add_passthrough(p: argparse.ArgumentParser) -> None:
    """-e, --tags and --skip-tags, handed to ansible-playbook as it takes them."""
    from sparkfab.push.passthrough import SPECIAL_TAGS, TAGS

    g = p.add_argument_group("ansible-playbook's own options (as it takes them)")
    g.add_argument(
        "-e",
        "--extra-vars",
        action="append",
        default=[],
        metavar="VARS",
        help="extra variables: key=value, YAML/JSON, or @FILE (repeatable; the run's command line, and so "
        "its artifacts, keep them: put secrets in a vault)",
    )
    tags = ", ".join(TAGS)
    only = g.add_argument(
        "-t", "--tags", action="append", default=[], metavar="TAGS", help=f"only the tasks tagged so ({tags})"
    )
    skip = g.add_argument("--skip-tags", action="append", default=[], metavar="TAGS", help="not the tasks tagged so")
    for action in (only, skip):
        setattr(action, VALUES, {**TAGS, **{t: "Ansible's own" for t in SPECIAL_TAGS}})


def add_format(p: argparse.ArgumentParser, *choices: str) -> None:
    """--format, first choice the default (table and json unless told)."""
    options = choices or ("table", "json")
    p.add_argument(
        "--format",
        choices=options,
        default=options[0],
        help=f"{options[0]} for people (default), {' or '.join(options[1:])} for programs",
    )


def add_check_limit(p: argparse.ArgumentParser) -> None:
    """--limit of a read-only verb: the checks of some hosts (checking the one Spark replaced)."""
    p.add_argument(
        "-l",
        "--limit",
        help="only these hosts (an Ansible pattern, as ansible-playbook takes it): their checks, and those "
        "across the ranks of the instances they hold whole",
    )


def add_all_rows(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="table: also list passing checks")
