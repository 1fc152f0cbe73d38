"""`sparkfab exporter start|stop|status|prometheus|dashboard`: the fabric exporter every Spark of
an inventory with `exporter:` runs (installed by apply, `assets/exporter.py`), a Prometheus scrape
configuration for it and the engine, and the Grafana dashboard that shows both."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sparkfab.cluster.limits import files_here, selected
from sparkfab.cluster.target import Target
from sparkfab.commands.common import Verb, add_changes, add_format, add_target
from sparkfab.commands.runs import confirm, fail_if, run_options, run_with_progress
from sparkfab.errors import Exit, UsageError
from sparkfab.files import yamlload
from sparkfab.plan import Plan
from sparkfab.render import exporter as files

_err = Console(stderr=True, width=140)
#: the engines whose API server has Prometheus metrics at /metrics
ENGINES_WITH_METRICS = ("vllm", "sglang")
DASHBOARD = "grafana-dashboard.json"


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=("start", "stop", "status", "prometheus", "dashboard"),
        help="start or stop the exporter on every Spark; status: each one's state and series (changes "
        "nothing); prometheus: a scrape configuration for the exporters and the engine; dashboard: "
        "the Grafana dashboard (JSON)",
    )
    add_target(p)
    add_changes(p, check="say where it would start or stop the exporter; change nothing")
    add_format(p)
    # the dashboard is the same for every cluster: it needs no inventory
    p.set_defaults(inventory_needed=lambda a: a.action != "dashboard")


def exporter_cmd(args: argparse.Namespace) -> int:
    if args.action == "dashboard":
        sys.stdout.write(dashboard())
        return Exit.OK
    if args.action in ("status", "prometheus"):
        target = Target.load(args.inventory, lab=args.lab)
        _needs_exporter(target.plan)
        if args.action == "prometheus":
            sys.stdout.write(scrape_config(target.plan))
            return Exit.OK
        return _status(target, args)
    with Target.held(args.inventory, f"exporter {args.action}", lab=args.lab) as target:
        _needs_exporter(target.plan)
        tree = target.render()
        limit = files_here(args.limit)
        opts = run_options(args)
        confirm(target, args, f"exporter {args.action}", selected(target.plan, tree, limit))
        result = run_with_progress(
            "exporter.yml", target, tree, opts, {"sparkfab_exporter_action": args.action}, limit=limit
        )
        fail_if(result, target)
        changed = sorted(h.host for h in result.hosts.values() if h.changed)
        verb = "started or restarted" if args.action == "start" else "stopped"
        if args.check:
            _err.print(
                f"exporter {args.action} --check: would change {len(changed)} host(s)"
                + (f" ({', '.join(changed)})" if changed else "")
                + "; nothing changed"
            )
        else:
            _err.print(f"exporter {verb} on {len(changed)} host(s)" + (f" ({', '.join(changed)})" if changed else ""))
    return Exit.OK


def _needs_exporter(plan: Plan) -> None:
    if plan.exporter is None:
        raise UsageError(
            f"{plan.cluster} has no exporter: add `exporter: true` (or {{port: 9465}}) to the sparkfab block, "
            "then apply"
        )


def dashboard() -> str:
    """The Grafana dashboard: per-rail utilisation, 1 ms peaks, links and errors next to the
    engine's own metrics (`assets/grafana-dashboard.json`)."""
    return resources.files("sparkfab").joinpath("assets", DASHBOARD).read_text(encoding="utf-8")


def scrape_config(plan: Plan) -> str:
    """A Prometheus configuration that scrapes every exporter and each instance's rank 0 API
    (vLLM's and SGLang's /metrics), every series labelled with the cluster; the scrape interval
    is the exporter's peak window, so that every 1 ms peak is seen by one scrape."""
    assert plan.exporter is not None
    interval = f"{min(plan.exporter.peak_window_s, 60)}s"
    exporters = [f"{files.target_host(h.mgmt_address)}:{plan.exporter.port}" for h in plan.hosts if h.ifaces]
    jobs: list[dict[str, object]] = [
        {
            "job_name": "sparkfab-fabric",
            "scrape_interval": interval,
            "static_configs": [{"targets": exporters, "labels": {"cluster": plan.cluster}}],
        }
    ]
    engines = []
    for inst in plan.instances:
        if inst.recipe is None or inst.recipe.engine not in ENGINES_WITH_METRICS:
            continue
        head = plan.host(inst.ranks[0].host)
        engines.append(
            {
                "targets": [f"{files.target_host(head.mgmt_address)}:{inst.port}"],
                "labels": {"cluster": plan.cluster, "sparkfab_instance": inst.name, "engine": inst.recipe.engine},
            }
        )
    if engines:
        jobs.append({"job_name": "sparkfab-engine", "scrape_interval": interval, "static_configs": engines})
    title = (
        f"# sparkfab: Prometheus scrape configuration for {plan.cluster}"
        " (generated by `sparkfab exporter prometheus`)\n"
        "# Use it as prometheus.yml, or copy its scrape_configs into yours.\n"
    )
    return title + yamlload.dump({"global": {"scrape_interval": interval}, "scrape_configs": jobs})


#: each host's exporter as systemd and its own /metrics say, in one command
STATUS = (
    "systemctl show -p ActiveState -p ActiveEnterTimestamp {unit}; echo @@; "
    "python3 -c 'import sys, urllib.request; "
    'sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:{port}/metrics", timeout=5).read().decode())'
    "' 2>&1 | grep -E '^sparkfab_(fabric_link_up|fabric_transmit_bytes_total|exporter_missed_samples_total)' || true"
)


def row(host: str, remote: Any, port: int) -> dict[str, Any]:
    """One host's exporter as its systemd and its own /metrics say; a host that does not answer
    is a row that says so (`unreachable`), not the end of the verb."""
    try:
        res = remote.run(STATUS.format(unit=files.UNIT, port=port))
    except Exception as exc:  # testinfra raises on ssh's own failure (exit 255)
        detail = str(getattr(exc.args[0], "stderr", "") if exc.args else "") or str(exc)
        lines = detail.strip().splitlines()
        return {
            "host": host,
            "state": "unreachable",
            "since": "",
            "series": 0,
            "links_up": 0,
            "links": 0,
            "missed": None,
            "detail": lines[-1][:200] if lines else type(exc).__name__,
        }
    head, _, metrics = res.stdout.partition("@@")
    props = dict(x.split("=", 1) for x in head.splitlines() if "=" in x)
    lines = [x for x in metrics.splitlines() if x.strip()]
    up = [x for x in lines if x.startswith("sparkfab_fabric_link_up")]
    return {
        "host": host,
        "state": props.get("ActiveState", "").strip() or "unknown",
        "since": props.get("ActiveEnterTimestamp", "").strip(),
        "series": sum(1 for x in lines if x.startswith("sparkfab_fabric_transmit_bytes_total")),
        "links_up": sum(1 for x in up if x.rsplit(" ", 1)[-1] == "1"),
        "links": len(up),
        "missed": next((int(float(x.rsplit(" ", 1)[-1])) for x in lines if "missed" in x), None),
        "detail": "",
    }


def _status(target: Target, args: argparse.Namespace) -> int:
    plan = target.plan
    assert plan.exporter is not None
    conn = target.connection("exporter")
    limited = target.limited(getattr(args, "limit", None))
    rows = [
        row(h.name, conn.remote(h.name), plan.exporter.port)
        for h in plan.hosts
        if h.ifaces and (limited is None or h.name in limited)
    ]
    if args.format == "json":
        sys.stdout.write(json.dumps({"cluster": plan.cluster, "exporters": rows}, indent=2) + "\n")
    else:
        t = Table(title=f"fabric exporters of {plan.cluster} (port {plan.exporter.port})")
        for col in ("host", "state", "since", "series", "links up", "missed samples", "detail"):
            t.add_column(col)
        for r in rows:
            style = "green" if r["state"] == "active" and r["series"] else "red"
            t.add_row(
                str(r["host"]),
                Text(str(r["state"]), style=style),
                str(r["since"]),
                str(r["series"]),
                f"{r['links_up']}/{r['links']}",
                "-" if r["missed"] is None else str(r["missed"]),
                Text(str(r["detail"])),
            )
        Console(width=160).print(t)
    return Exit.OK if all(r["state"] == "active" and r["series"] for r in rows) else Exit.CHECK


VERBS = (
    Verb(
        "exporter",
        "Start or stop the fabric exporter (Prometheus metrics of each Spark's fabric); its scrape config, dashboard.",
        _args,
        exporter_cmd,
    ),
)
