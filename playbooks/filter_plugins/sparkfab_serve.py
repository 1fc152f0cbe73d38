"""Filter for playbooks/serve.yml: what each host does, decided for every host at once on the
controller (one `add_host` loop instead of a `fail` and a `group_by` task, each a turn of the
strategy on every host)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: what needs every rank of an instance: a start of any kind
STARTS = ("start", "restart", "restart-if-running")


def _true(value: object) -> bool:
    """A variable as Ansible's `bool` filter reads it (without importing Ansible: sparkfab's tests
    load this file into a process that must not have it)."""
    if isinstance(value, str):
        return value.strip().lower() in ("y", "yes", "on", "1", "true", "t")
    return value in (True, 1)


def serve_groups(
    answered: Iterable[str], hostvars: Mapping[str, Mapping[str, Any]], every: Iterable[str], wanted: str = "start"
) -> list[dict[str, Any]]:
    """For each host of `answered` (the play's hosts whose engine probe answered; `every` is all
    of the play's) that serves an instance: {host, groups, gone}. An instance with a rank that
    did not answer is not started anywhere (its answering ranks go to sparkfab_serve_refused, with
    the silent ranks in `gone`); otherwise a host goes to sparkfab_serve_stop where its engine
    stops, to its wave (sparkfab_serve_first or _second, as its launch files say) where it
    starts, and rank 0 to sparkfab_serve_health where it waits for the engine's health."""
    answered = list(answered)
    gone: dict[str, list[str]] = {}
    for h in every:
        instance = hostvars[h].get("sparkfab_instance")
        if h not in answered and instance is not None:
            gone.setdefault(instance, []).append(h)
    out = []
    for h in answered:
        v = hostvars[h]
        instance = v.get("sparkfab_instance")
        if instance is None:
            continue
        if gone.get(instance) and wanted in STARTS:
            out.append({"host": h, "groups": ["sparkfab_serve_refused"], "gone": sorted(gone[instance])})
            continue
        probe = (v.get("sparkfab_serve_probe") or {}).get("stdout", "")
        running = probe == "running"
        follow = wanted == "restart-if-running" and probe in ("running", "resume")
        stop = wanted in ("stop", "restart") or follow
        start = (wanted == "start" and not running) or wanted == "restart" or follow
        health = start and int(v["sparkfab_rank"]) == 0 and v.get("sparkfab_health_url") is not None
        wave = "sparkfab_serve_first" if _true(v.get("sparkfab_start_first", False)) else "sparkfab_serve_second"
        groups = (["sparkfab_serve_stop"] if stop else []) + ([wave] if start else [])
        out.append({"host": h, "groups": groups + (["sparkfab_serve_health"] if health else []), "gone": []})
    return out


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sparkfab_serve_groups": serve_groups}
