"""Which hosts a run reaches: an instance's hosts as an Ansible limit, a user's `--limit` matched
as ansible-playbook matches it (against the rendered inventory, before any host is contacted),
and the whole instances a partial flip covers."""

from __future__ import annotations

import re
from pathlib import Path

from sparkfab.errors import Unavailable, UsageError
from sparkfab.inventory.ansible import matching
from sparkfab.plan import Plan


def instance_limit(plan: Plan, instance: str | None, limit: str | None) -> str | None:
    """An Ansible --limit for one instance's hosts (and a user's pattern on top)."""
    if instance is None:
        return limit
    names = [i.name for i in plan.instances]
    if instance not in names:
        raise UsageError(f"--instance {instance}: {plan.cluster} has the instance(s) {', '.join(names) or '(none)'}")
    hosts = ",".join(plan.instance(instance).hosts)
    return f"{hosts}:&{limit}" if limit else hosts


def files_here(limit: str | None) -> str | None:
    """A --limit whose `@FILE` parts name files of the working directory (Ansible runs from the
    playbooks' directory, where a relative one would be looked for)."""
    if not limit:
        return limit
    return "".join(f"@{Path(x[1:]).resolve()}" if x.startswith("@") else x for x in re.split(r"([,:])", limit))


def checked(limit: str) -> str:
    """`limit`, once what Ansible would misread in it is refused by the limit's own name: an
    `@FILE` that is not a regular file (Ansible would block on a FIFO, or blame the inventory),
    a `~` term that is no regular expression (Ansible selects every host for `~[`)."""
    from sparkfab.files import userfile

    for term in re.split(r"[,:]", limit):
        bare = term.lstrip("!&")
        if bare.startswith("@"):
            try:
                userfile.regular(bare[1:], "limit file")
            except (Unavailable, UsageError) as exc:
                raise UsageError(f"--limit {limit}: {exc}") from None
        elif bare.startswith("~"):
            try:
                re.compile(bare[1:])
            except re.error as exc:
                raise UsageError(f"--limit {limit}: {bare} is not a regular expression ({exc})") from None
    return limit


def _matching(tree: Path, limit: str) -> list[str]:
    """The hosts `limit` selects in the rendered inventory; what Ansible refuses in it, said of the limit."""
    try:
        return matching(tree / "inventory.yml", checked(limit))
    except UsageError as exc:
        text = re.sub(r"^Ansible could not read the inventory: (ansible\.errors\.AnsibleError: )?", "", str(exc))
        if not re.search(r"[Ll]imit|host list pattern", text):
            raise
        raise UsageError(f"--limit {limit}: Ansible refuses it: {text}") from None


def selected(plan: Plan, tree: Path, limit: str | None) -> list[str]:
    """The hosts a run will touch: all, or what `limit` selects as ansible-playbook selects it
    (matched against the rendered inventory, before any host is contacted). A limit that
    selects none is refused."""
    if not limit:
        return [h.name for h in plan.hosts]
    hosts = _matching(tree, limit)
    if not hosts:
        raise UsageError(f"--limit {limit} selects no host of {plan.cluster}")
    return hosts


def flipped_instances(plan: Plan, tree: Path | None, instance: str | None, limit: str | None) -> list[str] | None:
    """The instances a partial flip covers (None: the whole cluster). A --limit is matched the
    way Ansible matches it, against the rendered inventory, and must cover whole instances."""
    instance_limit(plan, instance, None)  # an unknown instance is refused here
    if limit is None:
        return [instance] if instance else None
    assert tree is not None, "a --limit is matched against the rendered tree"
    chosen = set(_matching(tree, limit))
    names = [instance] if instance else [i.name for i in plan.instances if chosen & set(i.hosts)]
    for name in names:
        missing = sorted(set(plan.instance(name).hosts) - chosen)
        if missing:
            raise UsageError(
                f"--limit {limit} leaves out {', '.join(missing)} of {name}: its ranks share one link speed"
            )
    if not names:
        raise UsageError(f"--limit {limit} matches no host of an instance")
    return names
