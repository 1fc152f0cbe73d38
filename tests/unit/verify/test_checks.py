"""The host checks as tables: what a Spark answers (captured shapes of `ip -j`, sysfs, sysctl,
files) in, the rows of the report out; through a host double, without root or ssh."""

from __future__ import annotations

import dataclasses
import json
import shlex
from typing import Any

import pytest

from sparkfab.render import control
from sparkfab.render.tree import render
from sparkfab.resolve import load_plan
from sparkfab.verify import checks
from sparkfab.verify.expect import expect
from sparkfab.verify.result import Report
from tests.conftest import REPO
from tests.doubles.host import Answer, FakeHost, ip_addr, ip_link

RING = load_plan(str(REPO / "inventory/ring4.yml"))
HOST = RING.hosts[0]


def _healthy(**change: Any) -> dict[str, Any]:
    links = {i.netdev: {"mtu": RING.mtu} for i in HOST.ifaces}
    addrs = {i.netdev: [i.address] for i in HOST.ifaces}
    speeds = {i.netdev: 200000 for i in HOST.ifaces}
    for name, what in change.items():
        kind, dev = name.split("__")
        dev = HOST.ifaces[int(dev)].netdev
        {"link": links, "addr": addrs, "speed": speeds}[kind][dev] = what
    links = {k: v for k, v in links.items() if v is not None}
    return {"links": links, "addrs": addrs, "speeds": speeds}


def _host(state: dict[str, Any]) -> FakeHost:
    speed = "".join(f"{d} {s}\n" for d, s in state["speeds"].items())
    return FakeHost(
        {
            "ip -j link show": Answer(0, ip_link(**state["links"])),
            "ip -j -4 addr show": Answer(0, ip_addr(**state["addrs"])),
            "for i in ": Answer(0, speed),
        }
    )


HW = expect("200")
LINK_ROWS = [
    ("healthy", _healthy(), HW, []),
    ("no such netdev", _healthy(link__0=None), HW, [("netdev", 0, "absent", "no such interface")]),
    (
        "unplugged",
        _healthy(link__1={"mtu": 9000, "carrier": False}),
        HW,
        [("carrier", 1, "0", "no carrier: cable unplugged or far end down")],
    ),
    ("down", _healthy(link__2={"mtu": 9000, "up": False}), HW, [("up", 2, "DOWN", ""), ("carrier", 2, "0", None)]),
    ("mtu 1500", _healthy(link__3={"mtu": 1500}), HW, [("mtu", 3, "1500", "")]),
    (
        "NVIDIA's netplan file's address beside the plan's",
        _healthy(addr__0=[HOST.ifaces[0].address, "192.168.100.10/24"]),
        HW,
        [("ipv4", 0, None, "")],
    ),
    ("no address", _healthy(addr__1=[]), HW, [("ipv4", 1, "[]", "")]),
    ("a twin at 100G", _healthy(speed__2=100000), HW, [("speed", 2, "100000", "link speed 200 expects 200000")]),
    ("100e runs on the 200G link", _healthy(), expect("100e"), []),
    ("a 100G cluster at 100G", _healthy(**{f"speed__{i}": 100000 for i in range(4)}), expect("100"), []),
    (
        "a 100G cluster on a 200G lane",
        _healthy(speed__0=200000, **{f"speed__{i}": 100000 for i in range(1, 4)}),
        expect("100"),
        [("speed", 0, "200000", "link speed 100 expects 100000")],
    ),
    ("a veth's own speed, where the lab presents none", _healthy(speed__1=10000), HW, [("speed", 1, "10000", None)]),
]


@pytest.mark.parametrize("case,state,exp,failing", LINK_ROWS, ids=[r[0] for r in LINK_ROWS])
def test_link_checks(case, state, exp, failing):
    rows = checks.link_checks(RING, HOST, _host(state), exp)
    got = [r for r in rows if r.status == "fail"]
    assert len(got) == len(failing), [(r.check, r.subject, r.actual) for r in got]
    for r, (check, dev, actual, detail) in zip(got, failing, strict=True):
        assert (r.check, r.subject) == (check, HOST.ifaces[dev].netdev)
        assert actual is None or r.actual == actual
        assert detail is None or r.detail == detail
    assert len(rows) == len(failing) + sum(r.status == "pass" for r in rows)


FILES = {f.path: f.content for f in render(RING, {}).hosts[HOST.name]}
NCCL = "/etc/sparkfab/nccl.env"
SYSCTLS = {
    "net.ipv4.ip_forward": 1,
    **{f"net.ipv4.conf.{n}.rp_filter": 2 for n in HOST.fabric_ifs},
    **{f"net.ipv4.conf.{n}.arp_ignore": 1 for n in HOST.fabric_ifs},
    **{f"net.ipv4.conf.{n}.arp_announce": 2 for n in HOST.fabric_ifs},
}
RULESET = '{"nftables": []}'
MISSING = "missing: run `sparkfab apply`"
DIFFERS = "differs from the plan"


def _config_host(files: dict[str, str], sysctls: dict[str, Any], nft: int) -> FakeHost:
    return FakeHost(
        {"nft list table inet sparkfab": Answer(nft), "nft -j list ruleset": Answer(0, RULESET)}, files, sysctls
    )


CONFIG_ROWS = [
    ("as rendered", FILES, SYSCTLS, 0, []),
    ("edited by hand", {**FILES, NCCL: FILES[NCCL] + "NCCL_DEBUG=INFO\n"}, SYSCTLS, 0, [("file", NCCL, DIFFERS)]),
    ("never applied", {k: v for k, v in FILES.items() if k != NCCL}, SYSCTLS, 0, [("file", NCCL, MISSING)]),
    (
        "strict reverse-path filter",
        FILES,
        {**SYSCTLS, f"net.ipv4.conf.{HOST.fabric_ifs[0]}.rp_filter": 1},
        0,
        [("sysctl", f"net.ipv4.conf.{HOST.fabric_ifs[0]}.rp_filter", "")],
    ),
    ("no forwarding", FILES, {**SYSCTLS, "net.ipv4.ip_forward": 0}, 0, [("sysctl", "net.ipv4.ip_forward", "")]),
    (
        "a twin answers ARP for the other",
        FILES,
        {**SYSCTLS, f"net.ipv4.conf.{HOST.fabric_ifs[1]}.arp_ignore": 0},
        0,
        [("sysctl", f"net.ipv4.conf.{HOST.fabric_ifs[1]}.arp_ignore", "")],
    ),
    ("firewall not loaded", FILES, SYSCTLS, 1, [("firewall", "table inet sparkfab", "")]),
    (
        "a netdev renamed away: its keys are not there",
        FILES,
        {k: v for k, v in SYSCTLS.items() if f".{HOST.fabric_ifs[0]}." not in k},
        0,
        [("sysctl", k, "") for k in control.sysctls(RING, HOST) if f".{HOST.fabric_ifs[0]}." in k],
    ),
]  # fmt: skip


@pytest.mark.parametrize("case,files,sysctls,nft,failing", CONFIG_ROWS, ids=[r[0] for r in CONFIG_ROWS])
def test_config_checks(case, files, sysctls, nft, failing):
    assert HOST.forwarding and RING.control_plane == "fabric"  # the ring relays: every row applies
    rows = checks.config_checks(RING, HOST, _config_host(files, sysctls, nft), FILES)
    got = [(r.check, r.subject, r.detail) for r in rows if r.status == "fail"]
    assert got == failing


PAIR = load_plan(str(REPO / "inventory/pair-1cable.yml"))
SWEEP = [{"bytes": 4096, "time_us": 120.5, "algbw_GBps": 0.034, "busbw_GBps": 0.034}]


def _rank(ok: bool, sweep: list[dict[str, Any]] | None = None) -> Answer:
    line = {"check": {"ok": ok}, "all_ranks_ok": ok, "sweep": sweep or []}
    return Answer(0, "torch says hello\n" + json.dumps(line) + "\n")


COLLECTIVE_ROWS = [
    ("correct", _rank(True, SWEEP), _rank(True), True, {"0": "ok", "1": "ok"}),
    ("wrong sums", _rank(False, SWEEP), _rank(False), False, {"0": "wrong sums", "1": "wrong sums"}),
    (
        "rank 1 cannot connect",
        _rank(False, SWEEP),
        Answer(1, "", "Traceback ...\nRuntimeError: Connection refused\n"),
        False,
        {"0": "wrong sums", "1": "RuntimeError: Connection refused"},
    ),
]


@pytest.mark.parametrize("case,zero,one,ok,ranks", COLLECTIVE_ROWS, ids=[r[0] for r in COLLECTIVE_ROWS])
def test_collective_result_from_each_ranks_answer(case, zero, one, ok, ranks):
    inst = PAIR.instances[0]
    head, other = inst.ranks[0].host, inst.ranks[1].host
    hosts = {head: FakeHost({"": zero}), other: FakeHost({"": one})}
    res = checks.collective(PAIR, inst, hosts, "gloo", "4K", lambda line: None)
    assert (res.ok, res.ranks, res.backend, res.world_size) == (ok, ranks, "gloo", 2)
    assert [r.bytes for r in res.sweep] == [4096] and res.sweep[0].busbw_GBps == 0.034
    assert f"--rank 1 --world-size 2 --master-addr {inst.master_addr}" in hosts[other].sent[0]
    # the JSON report keeps the shape scripts read: collective.<instance>.{ok, backend, ranks, sweep[]}
    d = Report(PAIR.cluster, "200", collective={inst.name: res}).to_dict()["collective"][inst.name]
    assert (d["ok"], d["backend"], d["ranks"], d["sweep"]) == (ok, "gloo", ranks, SWEEP)


def test_the_collective_runs_in_the_instances_image_for_the_docker_runtime():
    """A stock DGX OS host has no torch, and the host's NCCL is not the engine's: for the docker
    runtime the collective runs in the image, with the launch's own env files, devices and mounts."""
    inst = PAIR.instances[0]
    assert inst.runtime == "docker"
    cmd = checks.collective_command(PAIR, inst, 1, "nccl", "4K")
    docker = shlex.split(cmd)
    image = inst.recipe.image
    at = docker.index(image)
    assert docker[:3] == ["docker", "run", "--rm"] and docker[at - 2 : at + 1] == ["--entrypoint", "sh", image]
    for option in ("--gpus", "--device", "--env-file", "-v", "--network"):
        assert option in docker
    assert "/etc/sparkfab/launch/llama.env" in docker and "/etc/sparkfab:/etc/sparkfab:ro" in docker
    assert docker[at + 1] == "-c" and len(docker) == at + 3
    inside = shlex.split(docker[at + 2])
    after = inside[inside.index("exec") + 2 :]
    assert inside[:2] == ["exec", "${SPARKFAB_PYTHON:-python3}"]
    assert (
        after[:2] == ["/etc/sparkfab/collective.py", "run"]
        and "--backend" in after
        and after[after.index("--backend") + 1] == "nccl"
    )
    # the process runtime (the lab's, or a user's) runs the host's Python with the same env
    proc = checks.collective_command(PAIR, dataclasses.replace(inst, runtime="process"), 1, "gloo", "4K")
    assert "docker" not in proc and "/etc/sparkfab/launch/llama.env" in proc and "SPARKFAB_PYTHON" in proc
