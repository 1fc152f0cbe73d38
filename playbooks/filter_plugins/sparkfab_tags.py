"""Filter for the files role: which kinds of file a run installs under the user's --tags and
--skip-tags. One task installs every kind (a turn of the strategy per host, not one per kind);
each kind has a tag of its own, and a kind is installed exactly when a task carrying only its
tag would run (Ansible's rules: `ansible.playbook.taggable.Taggable.evaluate_tags`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def chosen(tag: str, run_tags: Iterable[str], skip_tags: Iterable[str]) -> bool:
    """Whether a task tagged `tag` alone (neither `always` nor `never`) runs under these tags."""
    run, skip = set(run_tags or ("all",)), set(skip_tags or ())
    runs = bool({"all", "tagged", tag} & run)
    return runs and not ({"all", "tagged", tag} & skip)


def tagged(kinds: Iterable[str], tag_of: Mapping[str, str], run_tags: Iterable[str], skip_tags: Iterable[str]) -> list:
    """`kinds` (in order) whose tag is chosen; a kind without a tag in `tag_of` is its own tag."""
    return [k for k in kinds if chosen(tag_of.get(k, k), run_tags, skip_tags)]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sparkfab_tagged": tagged}
