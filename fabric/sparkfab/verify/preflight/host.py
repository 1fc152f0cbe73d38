"""preflight's checks of one Spark: login and root, its fabric netdevs and RDMA devices, other
netplan files that touch them, its clock, and the programs a Spark as shipped may lack."""

from __future__ import annotations

import importlib.util
import shlex
from types import ModuleType

from sparkfab.facts import rdma
from sparkfab.facts.netdevs import DRIVERS, LINKS
from sparkfab.facts.remote import Remote
from sparkfab.paths import repo_dir
from sparkfab.plan import Host, Plan
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import FAIL, PASS, WARN, Result

NETPLAN_DIRS = ("/etc/netplan", "/run/netplan", "/lib/netplan")


def foreign_module() -> ModuleType:
    """The netplan module's own reader of other netplan files (one definition of "touches"), the
    collection's `module_utils/sparkfab_netplan_files.py`, loaded by its path."""
    path = repo_dir("playbooks") / "module_utils" / "sparkfab_netplan_files.py"
    spec = importlib.util.spec_from_file_location("sparkfab_netplan_files", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: what a Spark as shipped may lack, each with what supplies it and what needs it: (check,
#: probe, why); the probe runs as root, `command -v` on root's PATH
TOOLS = (
    (
        "lldpd",
        "command -v lldpcli >/dev/null && lldpcli show chassis >/dev/null",
        "lldpd is not running: `apt-get install lldpd` (apply installs it where lldpcli is missing; "
        "verify's cabling and discover read LLDP; apply sets its port ids to the netdevs' names)",
    ),
    (
        "perftest",
        "command -v ib_write_bw >/dev/null",
        "ib_write_bw is not installed: `apt-get install perftest` (verify --perf's per-rail bandwidth)",
    ),
)


def tools(plan: Plan, host: Host, th: Remote) -> list[Result]:
    """The programs the fabric's checks and a fabric control plane need on a Spark, each missing
    one named with the command that supplies it (none is a blocker: apply installs lldpd and
    nftables with apt, and perftest serves only verify --perf)."""
    if not host.ifaces:
        return []
    probes = list(TOOLS)
    if plan.control_plane == "fabric":
        why = "nft is not installed: `apt-get install nftables`, or apply installs it (it loads the fabric's firewall)"
        probes.append(("nftables", "command -v nft >/dev/null", why))
    out = []
    for name, probe, why in probes:
        ok = th.run(probe).rc == 0
        out.append(
            Result(
                check=Check.TOOLS,
                host=host.name,
                subject=name,
                expected="installed",
                actual="installed" if ok else "absent",
                status=PASS if ok else WARN,
                detail="" if ok else why,
            )
        )
    return out


def sudo(host: Host, th: Remote) -> Result:
    user = th.run("echo ${SUDO_USER:-root}").stdout.strip() or "root"
    how = "login is root" if user == "root" else f"{user} through {getattr(th, 'sparkfab_how', 'sudo -n')}"
    return Result(
        check=Check.SUDO, host=host.name, subject="root", expected="root", actual="root", status=PASS, detail=how
    )


def netdevs(host: Host, th: Remote) -> list[Result]:
    links = LINKS.of(th)
    out = []
    for name in host.fabric_ifs:
        link = links.get(name)
        if link is None:
            hint = "no such netdev: check the cable's port (p0/p1) in the inventory, and `ip link` on the host"
            out.append(
                Result(
                    check=Check.NETDEV,
                    host=host.name,
                    subject=name,
                    expected="present",
                    actual="absent",
                    status=FAIL,
                    detail=hint,
                )
            )
            continue
        state = link.operstate.lower()
        if "NO-CARRIER" in link.flags:
            out.append(
                Result(
                    check=Check.NETDEV,
                    host=host.name,
                    subject=name,
                    expected="present",
                    actual="no carrier",
                    status=WARN,
                    detail="is the cable in?",
                )
            )
        elif not link.up:
            out.append(
                Result(
                    check=Check.NETDEV,
                    host=host.name,
                    subject=name,
                    expected="present",
                    actual="down",
                    status=WARN,
                    detail="apply brings it up",
                )
            )
        else:
            out.append(
                Result(
                    check=Check.NETDEV,
                    host=host.name,
                    subject=name,
                    expected="present",
                    actual=f"present, {state}",
                    status=PASS,
                )
            )
    return out


def rdma_devices(host: Host, th: Remote) -> list[Result]:
    devices = sorted(set(host.hca["200"]))
    out = []
    for dev in devices:
        res = th.run(f"cat {shlex.quote(rdma.port_dir(dev) + '/state')}")
        if res.rc != 0:
            out.append(
                Result(
                    check=Check.RDMA,
                    host=host.name,
                    subject=dev,
                    expected="present",
                    actual="absent",
                    status=FAIL,
                    detail="no such RDMA device (ibdev2netdev)",
                )
            )
            continue
        state = res.stdout.strip()
        status = PASS if "ACTIVE" in state else WARN
        out.append(
            Result(
                check=Check.RDMA,
                host=host.name,
                subject=dev,
                expected="ACTIVE",
                actual=state,
                status=status,
                detail="" if status == PASS else "no link yet",
            )
        )
    return out


def netplan(host: Host, th: Remote) -> list[Result]:
    """Other netplan files that configure a fabric netdev: apply refuses them (or moves them
    aside with --take-over-netplan)."""
    import yaml

    mod = foreign_module()
    listing = th.run(
        f"for f in $(ls {' '.join(d + '/*.yaml' for d in NETPLAN_DIRS)} 2>/dev/null); do "
        'printf "\\n@@sparkfab-file %s\\n" "$f"; cat "$f"; done'
    ).stdout
    facts = DRIVERS.of(th, list(host.fabric_ifs))
    found = []
    for chunk in listing.split("\n@@sparkfab-file ")[1:]:
        path, _, text = chunk.partition("\n")
        if path == "/etc/netplan/60-sparkfab.yaml":
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            found.append(
                Result(
                    check=Check.NETPLAN,
                    host=host.name,
                    subject=path,
                    expected="readable",
                    actual="not YAML",
                    status=WARN,
                    detail="netplan will refuse it",
                )
            )
            continue
        devs = mod.touched(doc, list(host.fabric_ifs), facts)
        if devs:
            hint = f"configures {', '.join(devs)}: apply refuses it; --take-over-netplan moves it aside"
            found.append(
                Result(
                    check=Check.NETPLAN,
                    host=host.name,
                    subject=path,
                    expected="no other file",
                    actual="configures fabric netdevs",
                    status=FAIL,
                    detail=hint,
                )
            )
    return found or [
        Result(
            check=Check.NETPLAN,
            host=host.name,
            subject="other files",
            expected="none on the fabric",
            actual="none",
            status=PASS,
        )
    ]


def clock(host: Host, th: Remote) -> Result:
    res = th.run("timedatectl show -p NTPSynchronized --value")
    got = res.stdout.strip() or "unknown"
    status = PASS if got == "yes" else WARN
    return Result(
        check=Check.CLOCK,
        host=host.name,
        subject="NTP",
        expected="yes",
        actual=got,
        status=status,
        detail="" if status == PASS else "traces and logs misalign",
    )


# ----------------------------------------------------------------------------- per instance
