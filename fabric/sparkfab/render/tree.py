"""Everything a host needs, and the Ansible inventory that pushes it.

`render(plan)` returns {host: [File]} plus the inventory files; `sparkfab.render.writer` puts
them on disk as DIR/<host>/etc/... and DIR/inventory.yml, DIR/host_vars/<host>.yml.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkfab.engines.collective import COLLECTIVE_PATH
from sparkfab.files import yamlload
from sparkfab.plan import Host, Plan
from sparkfab.render import File, control, exporter, launch, nccl, netplan
from sparkfab.resolve.cables import SERVE_GROUPS

LLDP_PATH = "/etc/lldpd.d/sparkfab.conf"
LLDP_CONF = (
    "# sparkfab: cabling checks compare LLDP port ids with the plan (generated)\nconfigure lldp portidsubtype ifname\n"
)


@dataclass(frozen=True)
class Tree:
    hosts: dict[str, tuple[File, ...]]
    inventory: File
    host_vars: dict[str, File]
    warnings: tuple[str, ...]


def host_files(plan: Plan, host: Host, assets: dict[str, str]) -> list[File]:
    files: list[File] = []
    if host.ifaces:
        files += [netplan.netplan(plan, host, plan.netplan_renderer), nccl.nccl_env(plan, host)]
        graph = nccl.graph_xml(plan, host)
        if graph is not None:
            files.append(graph)
        files.append(File(LLDP_PATH, LLDP_CONF))
        files.append(control.sysctl(plan, host))
    if plan.control_plane == "fabric" and host.ifaces:
        files += [control.nftables(plan, host), control.ufw_rules(plan, host)]
        files.append(control.firewall_unit(plan, host))
        if host.forwarding:
            files += [control.docker_user(plan, host), control.docker_unit(plan, host)]
    files += exporter.files(plan, host, assets.get("exporter.py", ""))
    inst = plan.instance_of(host.name)
    if inst is not None and inst.recipe is not None:
        files += launch.files(plan, inst, host, inst.recipe)
        # verify --collective runs it on every rank (and the lab serves it)
        files.append(File(COLLECTIVE_PATH, assets.get("collective.py", ""), 0o644))
    return sorted(files, key=lambda f: f.path)


def render(plan: Plan, assets: dict[str, str] | None = None) -> Tree:
    """Every host's files and the inventory (the same for a lab's Sparks as for real ones)."""
    assets = assets or {}
    hosts = {h.name: tuple(host_files(plan, h, assets)) for h in plan.hosts}
    return Tree(
        hosts,
        inventory(plan),
        {h.name: _host_vars(plan, h, hosts[h.name]) for h in plan.hosts},
        tuple(nccl.warnings(plan)),
    )


def inventory(plan: Plan) -> File:
    """The rendered tree's Ansible inventory: the hosts, the cluster's variables, serve.yml's groups."""
    hosts = {h.name: {"ansible_host": h.mgmt_address, **h.ansible} for h in plan.hosts}
    group = {
        **plan.group_vars,
        "sparkfab_cluster": plan.cluster,
        "sparkfab_control_plane": plan.control_plane,
    }
    # serve.yml's groups, empty (a play of an empty group is skipped without a warning only
    # when its group is declared), and the user's groups, so that `--limit sparks` selects
    # what it selects in their inventory
    children: dict[str, Any] = {g: {"hosts": {}} for g in SERVE_GROUPS}
    for name, members in sorted(plan.groups.items()):
        if name not in children:
            children[name] = {"hosts": {h: None for h in members}}
    doc = {"all": {"hosts": hosts, "vars": dict(sorted(group.items())), "children": children}}
    head = f"# sparkfab: Ansible inventory for the rendered tree of {plan.cluster} (generated)\n"
    return File("inventory.yml", head + yamlload.dump(doc))


_KINDS = (
    ("/etc/netplan/", "netplan"),
    ("/etc/sparkfab/nccl", "nccl"),
    ("/etc/sparkfab/launch/", "launch"),
    ("/etc/sparkfab/collective", "launch"),
    ("/etc/sysctl.d/", "control"),
    ("/etc/sparkfab/firewall", "control"),
    ("/etc/sparkfab/ufw", "control"),
    ("/etc/sparkfab/docker-user", "control"),
    ("/etc/sparkfab/sparkfab-docker-user", "control"),
    ("/etc/sparkfab/sparkfab-firewall", "control"),
    ("/etc/lldpd.d/", "lldp"),
    ("/etc/sparkfab/exporter", "exporter"),
    (exporter.UNIT_PATH, "exporter"),
)


def _kind(path: str) -> str:
    return next(kind for prefix, kind in _KINDS if path.startswith(prefix))


def bundle(files: tuple[File, ...]) -> str:
    """A host's files as one JSON document the host-side modules read: each with its kind
    (sparkfab_netplan installs the netplan files, sparkfab_install the others)."""
    import json

    data = {f.path: {"content": f.content, "mode": f"{f.mode:04o}", "kind": _kind(f.path)} for f in files}
    return json.dumps({"files": data}, indent=1, sort_keys=True) + "\n"


def _host_vars(plan: Plan, host: Host, files: tuple[File, ...]) -> File:
    inst = plan.instance_of(host.name)
    meta: dict[str, Any] = {}
    if inst is not None and inst.recipe is not None:
        lx = launch.launch(plan, inst, host, inst.recipe)
        meta = {
            "sparkfab_rank": lx.rank,
            "sparkfab_world_size": lx.world,
            "sparkfab_start_order": lx.start_order,
            "sparkfab_start_first": lx.start_first,
            "sparkfab_health_wait_s": lx.health_wait_s,
            "sparkfab_runtime": lx.runtime,
            "sparkfab_health_url": lx.health_url,
            "sparkfab_warm_url": lx.warm_url,
            "sparkfab_warm_key_env": lx.warm_key_env,
            "sparkfab_engine_flag_hash": lx.engine_hash,
            "sparkfab_secrets": list(lx.secrets),
        }
    data = {
        "sparkfab_files": [
            {"src": f.path.lstrip("/"), "dest": f.path, "mode": f"{f.mode:04o}", "kind": _kind(f.path)} for f in files
        ],
        "sparkfab_addresses": [{"dev": i.netdev, "address": i.address} for i in host.ifaces],
        # what `ip route show` lists for each control route once networkd has added it
        "sparkfab_routes": [{"to": r.to.split("/")[0], "via": r.via, "dev": r.dev} for r in host.routes],
        "sparkfab_fabric_ifs": list(host.fabric_ifs),
        "sparkfab_mtu": plan.mtu,
        "sparkfab_instance": inst.name if inst else None,
        "sparkfab_forwarding": host.forwarding,
        **meta,
    }
    head = f"# sparkfab: variables of {host.name} (generated)\n"
    return File(f"host_vars/{host.name}.yml", head + yamlload.dump(data))
