"""What a user hands ansible-playbook through a verb: `-e`, `--tags` and `--skip-tags`, as
ansible-playbook takes them, and the table of the tags sparkfab's plays carry (what each
configures). The verbs' flags are `commands.common.add_passthrough`, read and checked through
`commands.runs.passthrough` (so no argparse namespace crosses into this layer); the deploy seam
puts them on the run's command line; what ansible-playbook makes of them is held to
ansible-playbook's own behaviour by tests/slow/test_passthrough_table.py."""

from __future__ import annotations

from dataclasses import dataclass

from sparkfab.errors import UsageError

#: the tags of sparkfab's plays, each with what its tasks configure (`--tags`, `--skip-tags`);
#: the checks every run makes first are tagged `always`, as Ansible names what runs whatever
#: the tags say (a test holds this table to what `ansible-playbook --list-tags` lists)
TAGS = {
    "netplan": "the fabric netdevs' netplan file and its apply",
    "nccl": "the NCCL environment files",
    "firewall": "the control plane: sysctls, the nftables table, its units, ufw and DOCKER-USER rules",
    "packages": "the Debian packages a host lacks for the fabric's files (lldpd, nftables), with apt",
    "engine": "the engines' launch files and secrets; serving's stops and starts",
    "lldp": "lldpd's settings (port ids by netdev name)",
    "exporter": "the fabric exporter's files and its unit",
    "ssh": "rank 0's key among its ranks' authorized keys (peer-ssh)",
}

#: the tags Ansible itself gives a meaning to
SPECIAL_TAGS = ("all", "always", "never", "tagged", "untagged")


@dataclass(frozen=True)
class PassThrough:
    """What a user gives a verb for ansible-playbook as it takes it: `-e` (key=value, YAML or
    JSON, `@FILE`), `--tags` and `--skip-tags` (each may be repeated and hold a comma list).
    They follow sparkfab's own options on the command line, before the variables sparkfab sets
    for the run, which win (the run's own settings are not the user's to override)."""

    extra_vars: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    skip_tags: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        out: list[str] = []
        for flag, values in (("-e", self.extra_vars), ("--tags", self.tags), ("--skip-tags", self.skip_tags)):
            for value in values:
                out += [flag, value]
        return out


def checked(
    extra_vars: list[str] | tuple[str, ...],
    tags: list[str] | tuple[str, ...],
    skip_tags: list[str] | tuple[str, ...],
    whole: str | None = None,
) -> PassThrough:
    """A verb's -e, --tags and --skip-tags, checked before any host is contacted: a tag no play
    of sparkfab's has is refused (ansible-playbook would run nothing and say nothing), an `@FILE`
    of -e must be a regular file, named absolute (Ansible runs in the playbooks' folder).
    `whole`: why this verb's play runs whole (tags refused)."""
    from sparkfab.files import userfile

    if whole and (tags or skip_tags):
        raise UsageError(f"--tags and --skip-tags do not apply here: {whole}")
    for flag, values in (("--tags", tags), ("--skip-tags", skip_tags)):
        for value in values:
            for tag in value.split(","):
                if tag.strip() not in (*TAGS, *SPECIAL_TAGS):
                    raise UsageError(
                        f"{flag} {value}: {tag.strip() or '(empty)'} is not a tag of sparkfab's plays: "
                        f"{', '.join(TAGS)} (and Ansible's own {', '.join(SPECIAL_TAGS)})"
                    )
    extra = []
    for value in extra_vars:
        if value.startswith("@"):
            value = f"@{userfile.regular(value[1:], '-e file').resolve()}"
        elif not value.strip():
            raise UsageError("-e: an empty value (give key=value, YAML or JSON, or @FILE)")
        extra.append(value)
    return PassThrough(tuple(extra), tuple(tags), tuple(skip_tags))
