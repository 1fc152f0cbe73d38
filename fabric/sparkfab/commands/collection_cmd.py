"""`sparkfab collection`: the roles, modules and playbooks sparkfab runs, as the Ansible
collection `sparkfab.fabric` (a tarball `ansible-galaxy collection install` takes)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from sparkfab.commands import argtypes as at
from sparkfab.commands.common import Verb
from sparkfab.errors import Exit
from sparkfab.push import collection


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o",
        "--output",
        type=at.path,
        default=Path("."),
        help="directory for the tarball (default: here); a tarball of this collection by the same name is replaced",
    )


def collection_cmd(args: argparse.Namespace) -> int:
    try:
        tarball = collection.build(args.output)
    except subprocess.CalledProcessError as e:
        sys.stderr.write(f"ansible-galaxy collection build failed (rc {e.returncode}):\n{e.stderr or e.stdout}")
        return Exit.UNAVAILABLE
    sys.stdout.write(f"{tarball}\n")
    if not args.quiet:
        sys.stderr.write(
            f"built {collection.FQCN} {collection.galaxy()['version']}; install it with:\n"
            f"  ansible-galaxy collection install {tarball}\n"
            f"or name it in a requirements.yml:  collections: [{{name: {tarball.resolve()}, type: file}}]\n"
        )
    return Exit.OK


VERBS = (
    Verb(
        "collection",
        "Build the Ansible collection sparkfab.fabric (its roles, modules and playbooks) as a tarball.",
        _args,
        collection_cmd,
    ),
)
