"""Parsers and comparisons on captured samples (no hosts needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkfab.facts.neighbours import Neighbour, local_chassis, neighbours
from sparkfab.resolve import load_plan
from sparkfab.verify import hardware, lldp
from sparkfab.verify.result import FAIL, PASS
from tests.conftest import REPO

CAPTURED = REPO / "tests/data/captured"


def _pairs(seen):
    return {k: [(n.system, n.port) for n in v] for k, v in seen.items()}


def _n(system, port, chassis=""):
    return Neighbour(system, port, chassis)


def test_lldp_check_against_plan_names_swaps_and_dead_ports():
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = plan.host("spark-329f")
    seen = neighbours((CAPTURED / "lldpcli-ring-spark329f.json").read_text())
    assert all(r.status == PASS for r in lldp.check_host(plan, host, seen))
    swapped = dict(seen)
    swapped["enp1s0f1np1"] = [_n("spark-c049", "enp1s0f0np0")]
    del swapped["enP2p1s0f0np0"]
    results = {r.subject: r for r in lldp.check_host(plan, host, swapped)}
    bad = results["enp1s0f1np1 (p1)"]
    assert (bad.status, bad.expected, bad.actual) == (FAIL, "spark-355d:enp1s0f1np1", "spark-c049:enp1s0f0np0")
    dead = results["enP2p1s0f0np0 (p0)"]
    assert dead.status == FAIL and dead.detail.startswith("missing")


def test_twins_on_one_wire_give_one_verdict_for_every_arrival_order():
    """A twin hears its own twin and both far twins (one wire per port): whichever lldpd lists
    last, the cable passes; its own twin alone is no cable; a swapped far end fails in every order."""
    import itertools

    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    host = plan.host("spark-a")
    own = {"spark-a", "aa:aa"}
    heard = [
        _n("spark-b", "enp1s0f1np1", "bb:bb"),
        _n("spark-b", "enP2p1s0f1np1", "bb:bb"),
        _n("spark-a", "enP2p1s0f1np1", "aa:aa"),
    ]
    for order in itertools.permutations(heard):
        seen = {"enp1s0f1np1": list(order), "enP2p1s0f1np1": list(order)}
        assert {r.status for r in lldp.check_host(plan, host, seen, own)} == {PASS}
    alone = {"enp1s0f1np1": [heard[2]], "enP2p1s0f1np1": [_n("spark-a", "enp1s0f1np1", "aa:aa")]}
    assert {r.detail[:7] for r in lldp.check_host(plan, host, alone, own)} == {"missing"}
    other = [_n("spark-c", "enp1s0f0np0", "cc:cc"), heard[2]]
    for order in itertools.permutations(other):
        rows = lldp.check_host(plan, host, {"enp1s0f1np1": list(order)}, own)
        assert rows[0].status == FAIL and rows[0].actual == "spark-c:enp1s0f0np0"


@pytest.mark.parametrize(
    "inventory,host,port_id",
    [
        ("switch8-crs804-200.yml", "spark-01", "qsfp56-dd-1-1"),
        ("switch8-crs804-200.yml", "spark-04", "qsfp56-dd-2-5"),  # sw1:2/2, the second 200G leg
        ("switch8-crs812-100.yml", "spark-03", "qsfp56-dd-1-5"),  # sw1:1/3, the third 100G leg
        ("switch8-crs812-100.yml", "spark-08", "qsfp56-dd-2-7"),
    ],
)
def test_lldp_switch_ports_as_routeros_names_them(inventory, host, port_id):
    plan = load_plan(str(REPO / "inventory" / inventory))
    h = plan.host(host)
    own = {host, "aa:aa"}
    twin = {i.netdev: _n(host, other.netdev, "aa:aa") for i, other in zip(h.ifaces, reversed(h.ifaces), strict=True)}
    name = plan.switch("sw1").lldp_name  # the CRS804 example's keeps RouterOS's identity
    seen = {i.netdev: [twin[i.netdev], _n(name, port_id, "cc:cc")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, seen, own)} == {PASS}
    lane = {i.netdev: [_n(name, port_id[:-1] + "9", "cc:cc")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, lane, own)} == {FAIL}


def test_a_switch_whose_identity_is_not_its_key_is_named_with_the_fix():
    plan = load_plan(str(REPO / "inventory/switch8-crs812-100.yml"))
    h = plan.host("spark-03")
    seen = {i.netdev: [_n("MikroTik", "qsfp56-dd-1-5")] for i in h.ifaces}
    rows = lldp.check_host(plan, h, seen)
    assert {r.status for r in rows} == {FAIL}
    assert (
        "announces itself as 'MikroTik' (MikroTik's name as shipped), not 'sw1': set `lldp_name: MikroTik` on switch sw1"
        in rows[0].detail
    )


@pytest.mark.parametrize(
    "name,rows,avg",
    [
        ("all_reduce_perf_2xH200_nvlink.txt", 14, 79.2011),
        ("all_reduce_perf_2xH200_socket_lo.txt", 13, None),
        ("all_gather_perf_2xH200_nvlink.txt", None, None),
    ],
)
def test_nccl_tests_parser_on_captured_runs(name, rows, avg):
    path = CAPTURED / name
    parsed, got_avg = hardware.parse_nccl_tests(path.read_text())
    if rows is not None:
        assert len(parsed) == rows
    if avg is not None:
        assert got_avg == avg
    if name == "all_reduce_perf_2xH200_nvlink.txt":
        last = parsed[-1]
        assert (last.size, last.dtype, last.time_us, last.busbw, last.ip_busbw) == (
            536870912,
            "float",
            1709.40,
            314.07,
            313.92,
        )
        # busbw = algbw x 2(N-1)/N with N = 2 ranks
        assert all(abs(r.busbw - r.algbw) < 0.011 for r in parsed)


PERFTEST_BW = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : rocep1s0f0
 Number of qps   : 2            Transport type : IB
 Connection type : RC           Using SRQ      : OFF
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 1048576    62531            0.00               109.27             0.013026
---------------------------------------------------------------------------------------
"""
PERFTEST_LAT = """ #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
 8       2000          1.38           4.71         1.44                1.45             0.04            1.62                    4.71
"""


def test_perftest_parsers_read_the_documented_tables():
    rows = hardware.parse_ib_write_bw(PERFTEST_BW)
    assert len(rows) == 1 and rows[0].size == 1048576 and rows[0].avg_gbps == 109.27
    lat = hardware.parse_ib_write_lat(PERFTEST_LAT)
    assert lat["t_typical"] == 1.44 and lat["p99"] == 1.62 and lat["bytes"] == 8


def _fake_sysfs(tmp: Path, device: str, address: str, index: int) -> None:
    base = tmp / f"sys/class/infiniband/{device}/ports/1"
    (base / "gid_attrs/types").mkdir(parents=True)
    (base / "gids").mkdir(parents=True)
    (base / "counters").mkdir(parents=True)
    a, b, c, d = (int(x) for x in address.split("."))
    for i in range(8):
        kind = "RoCE v2" if i % 2 else "IB/RoCE v1"
        gid = (
            f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"
            if i in (index - 1, index)
            else f"fe80:0000:0000:0000:0000:0000:0000:000{i}"
        )
        (base / f"gid_attrs/types/{i}").write_text(kind + "\n")
        (base / f"gids/{i}").write_text(gid + "\n")
    (base / "state").write_text("4: ACTIVE\n")
    (base / "rate").write_text("200 Gb/sec (4X NDR)\n")
    (base / "counters/port_xmit_data").write_text("123456\n")


def test_gid_index_is_derived_not_assumed(tmp_path):
    _fake_sysfs(tmp_path, "rocep1s0f1", "192.168.100.1", 5)  # v1 at 4, v2 at 5 (the table moved)

    def read(path: str) -> str | None:
        p = tmp_path / path.lstrip("/")
        return p.read_text() if p.exists() else None

    assert hardware.roce_v2_gid_index(read, "rocep1s0f1", "192.168.100.1") == 5
    assert hardware.roce_v2_gid_index(read, "rocep1s0f1", "192.168.100.2") is None


def test_rdma_checks_on_a_fake_sysfs(tmp_path):
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    host = plan.host("spark-a")
    for i in host.ifaces:
        _fake_sysfs(tmp_path, i.rdma, i.ip, 3)

    def read(path: str) -> str | None:
        p = tmp_path / path.lstrip("/")
        return p.read_text() if p.exists() else None

    results = hardware.rdma_checks(host, read, "200")
    assert len(results) == 8 and all(r.status == PASS for r in results), results
    (tmp_path / "sys/class/infiniband/roceP2p1s0f1/ports/1/state").write_text("1: DOWN\n")
    assert [r.subject for r in hardware.rdma_checks(host, read, "200") if r.status == FAIL] == ["roceP2p1s0f1"]
    assert len(hardware.rdma_checks(host, read, "100e")) == 4  # only root 0 is listed at 100e


@pytest.mark.parametrize("example", ["switch8-crs812-100", "switch16-crs804-100"])
def test_a_100g_cluster_passes_at_100g_and_fails_a_200g_expectation(tmp_path, example):
    """The shipped 100G examples: every twin at "100 Gb/sec (2X HDR)" passes at their mode 100,
    and the same hardware read against mode 200 fails every listed device's rate."""
    plan = load_plan(str(REPO / f"inventory/{example}.yml"))
    assert plan.link_speed == "100"
    host = plan.hosts[0]
    for i in host.ifaces:
        _fake_sysfs(tmp_path, i.rdma, i.ip, 3)
        (tmp_path / f"sys/class/infiniband/{i.rdma}/ports/1/rate").write_text("100 Gb/sec (2X HDR)\n")

    def read(path: str) -> str | None:
        p = tmp_path / path.lstrip("/")
        return p.read_text() if p.exists() else None

    assert all(r.status == PASS for r in hardware.rdma_checks(host, read, "100"))
    wrong = [r for r in hardware.rdma_checks(host, read, "200") if r.status == FAIL]
    assert [(r.check, r.expected) for r in wrong] == [("rdma-rate", "200 Gb/sec")] * len(host.hca["200"])


def test_expectations_come_from_the_mode_table():
    """Every mode's expectations, side by side; 100e keeps the 200G link and NCCL's one root."""
    from sparkfab.verify.expect import table

    rows = {r[0]: r[1:] for r in table()}
    assert rows["netdev speed (Mb/s)"] == ["200000", "200000", "100000"]
    assert rows["RDMA port rate"] == ["200 Gb/sec", "200 Gb/sec", "100 Gb/sec"]
    assert rows["all_reduce_perf busbw (Gb/s)"] == [">= 166.2", ">= 95", ">= 90"]  # 175 measured, less 5 %
    assert rows["ib_write_bw per port, both twins (Gb/s)"] == [">= 180", ">= 180", ">= 90"]
    assert rows["PCIe roots in NCCL_IB_HCA"] == ["0 and 1", "0", "0 and 1"]


def _chain(table, name, **kw):
    return {"chain": {"family": "ip", "table": table, "name": name, **kw}}


def _rule(table, chain, *expr):
    return {"rule": {"family": "ip", "table": table, "chain": chain, "expr": list(expr)}}


def _pair(a, b):
    meta = lambda key, v: {"match": {"op": "==", "left": {"meta": {"key": key}}, "right": v}}  # noqa: E731
    return [meta("iifname", a), meta("oifname", b), {"counter": {}}, {"accept": None}]


def test_forward_blockers_read_docker_user():
    """Docker's FORWARD drop is harmless only where DOCKER-USER accepts every fabric pair."""
    from sparkfab.verify import firewall

    pairs = [("a", "b"), ("b", "a")]
    docker = [
        _chain("filter", "FORWARD", hook="forward", policy="drop"),
        _chain("filter", "DOCKER-USER"),
        _rule("filter", "FORWARD", {"counter": {}}, {"jump": {"target": "DOCKER-USER"}}),
    ]
    ours = {"chain": {"family": "inet", "table": "sparkfab", "name": "forward", "hook": "forward", "policy": "drop"}}
    bad, ok = firewall.blockers({"nftables": [*docker, ours]}, pairs)
    assert bad == ["table ip filter chain FORWARD (policy drop): drops a -> b and 1 more pair(s)"] and ok == []
    half = [*docker, _rule("filter", "DOCKER-USER", *_pair("a", "b"))]
    assert firewall.blockers({"nftables": half}, pairs)[0][0].endswith("drops b -> a and 0 more pair(s)")
    full = [*half, _rule("filter", "DOCKER-USER", *_pair("b", "a"))]
    assert firewall.blockers({"nftables": full}, pairs) == ([], ["table ip filter chain FORWARD (policy drop)"])
    assert firewall.blockers({"nftables": [_chain("filter", "FORWARD", hook="forward", policy="accept")]}, pairs) == (
        [],
        [],
    )


# ---------------------------------------------------------------- issue 14: the image on every rank


@pytest.mark.parametrize(
    "text,version",
    [
        ("(2, 30, 7)\n", (2, 30, 7)),  # torch.cuda.nccl.version() in current torch
        ("23007\n", (2, 30, 7)),  # NCCL_VERSION_CODE, older torch
        ("21805\n", (2, 18, 5)),
        ("2708\n", (2, 7, 8)),  # the pre-2.9 encoding: major*1000 + minor*100 + patch
        ("vm:708:708 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n", (2, 28, 9)),
        ("2.31.2\n", (2, 31, 2)),
        ("Traceback ...\nModuleNotFoundError: No module named 'torch'\n", None),
        ("", None),
    ],
)
def test_nccl_version_strings(text, version):
    from sparkfab.verify.images import parse_nccl_version

    assert parse_nccl_version(text) == version


def test_nccl_version_of_a_captured_debug_log():
    from sparkfab.verify.images import parse_nccl_version

    path = CAPTURED / "torch_nccl_socket_debug_2xH200.log"
    assert parse_nccl_version(path.read_text()) == (2, 28, 9)


class _Res:
    def __init__(self, rc: int, stdout: str = "", stderr: str = "") -> None:
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


class _Host:
    """A host that answers `docker ...` commands from a table (what verify sends is recorded)."""

    def __init__(self, answers: dict[str, _Res]) -> None:
        self.answers, self.sent = answers, []

    def run(self, cmd: str) -> _Res:
        self.sent.append(cmd)
        return next((r for k, r in self.answers.items() if k in cmd), _Res(1, "", "unknown"))


def test_image_ids_must_match_on_every_rank():
    from sparkfab.verify.images import same_image

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    inst = plan.instances[0]
    ids = ["sha256:aaa", "sha256:aaa", "sha256:bbb", None]
    hosts = {
        h: _Host({"image inspect": _Res(0, f"{i}\n") if i else _Res(1, "", "No such image")})
        for h, i in zip(inst.hosts, ids, strict=True)
    }
    res = same_image(inst, "vllm/vllm-openai:v0.32.0", hosts)
    assert [r.status for r in res] == [PASS, PASS, FAIL, FAIL]
    assert res[3].actual == "absent" and "docker pull vllm/vllm-openai:v0.32.0" in res[3].detail
    assert "docker image inspect --format '{{.Id}}' vllm/vllm-openai:v0.32.0" in hosts[inst.hosts[0]].sent[0]


@pytest.mark.parametrize(
    "out,direct,status",
    [
        ("(2, 31, 2)\n", True, PASS),
        ("(2, 30, 7)\n", True, PASS),
        ("(2, 28, 9)\n", True, FAIL),  # a ring on an NCCL without subnet-aware routing
        ("(2, 28, 9)\n", False, PASS),  # a switch needs no subnet routing
    ],
)
def test_nccl_in_the_image_decides_not_the_inventory(out, direct, status):
    from sparkfab.verify.images import nccl_in_image

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = _Host({"docker run --rm --entrypoint python3": _Res(0, out)})
    r = nccl_in_image(plan.instances[0], "img:1", host, direct)
    assert r.status == status, r
    assert "torch.cuda.nccl.version()" in host.sent[0]


def test_an_image_without_torch_is_a_failure_with_the_reason():
    from sparkfab.verify.images import nccl_in_image

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = _Host({"docker run": _Res(1, "", "ModuleNotFoundError: No module named 'torch'")})
    r = nccl_in_image(plan.instances[0], "img:1", host, True)
    assert r.status == FAIL and r.actual == "unknown" and "No module named 'torch'" in r.detail


def test_perf_runs_each_rank_with_its_own_nccl_env():
    from sparkfab.verify.perf import all_reduce_command

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    inst = plan.instances[0]
    cmd = all_reduce_command(plan, inst)
    exported = re.findall(r" -x (\S+)", cmd)
    assert set(exported) == {"LD_LIBRARY_PATH", "UCX_NET_DEVICES", "MASTER_ADDR", "MASTER_PORT"}, (
        "no NCCL variable copied from the head"
    )
    assert "/etc/sparkfab/nccl.env" in cmd and "export" in cmd and 'exec "$0"' in cmd
    assert '"$HOME"/nccl-tests/build/all_reduce_perf' in cmd and '"$HOME"/nccl/build/lib' in cmd
    hosts = [h.split(":")[0] for h in re.search(r"mpirun -np \d+ -H (\S+)", cmd).group(1).split(",")]
    assert hosts == [plan.host(h).mgmt_address for h in inst.hosts], "ranks in cable order"
    assert f"btl_tcp_if_include {plan.host(inst.hosts[0]).mgmt_if}" in cmd


def test_preflight_names_foreign_netplan_files_without_importing_ansible():
    from sparkfab import preflight
    from sparkfab.resolve import load_plan

    host = load_plan(str(REPO / "inventory/ring4.yml")).hosts[0]
    dev = sorted(host.fabric_ifs)[0]
    files = {
        "/etc/netplan/60-sparkfab.yaml": f"network: {{ethernets: {{{dev}: {{}}}}}}",
        "/etc/netplan/40-cx7.yaml": f"network:\n  ethernets:\n    {dev}:\n      mtu: 1500",
        "/etc/netplan/01-mgmt.yaml": "network: {ethernets: {enP7s7: {dhcp4: true}}}",
    }
    listing = "".join(f"\n@@sparkfab-file {path}\n{text}\n" for path, text in files.items())
    rows = preflight._netplan(host, _Host({"": _Res(0, listing)}))
    assert [(r.subject, r.status) for r in rows] == [("/etc/netplan/40-cx7.yaml", "fail")]
    assert dev in rows[0].detail


def test_a_twin_on_one_wire_as_lldpd_lists_it():
    """Real lldpd output of a lab pair whose twins share a wire: three neighbours per twin, the
    host's own chassis among them; every port passes, whichever lldpd listed last."""
    plan = load_plan(str(REPO / "inventory/pair-1cable.yml"))
    seen = neighbours((CAPTURED / "lldpcli-one-wire-pair-spark-a.json").read_text())
    own = local_chassis((CAPTURED / "lldpcli-chassis-spark-a.json").read_text())
    assert {k: len(v) for k, v in seen.items()} == {"enp1s0f1np1": 3, "enP2p1s0f1np1": 3}
    assert {n.system for v in seen.values() for n in v} == {"spark-a", "spark-b"} and "spark-a" in own
    rows = lldp.check_host(plan, plan.host("spark-a"), seen, own)
    assert {r.status for r in rows} == {PASS}
    reversed_order = {k: v[::-1] for k, v in seen.items()}
    assert {r.status for r in lldp.check_host(plan, plan.host("spark-a"), reversed_order, own)} == {PASS}


def test_a_generic_switch_of_unknown_naming_is_matched_by_port_and_leg():
    """A generic switch whose OS sparkfab has no profile for names its ports its own way
    (Ethernet1/2): the last two numbers are its port and leg; another leg fails."""
    from tests.helpers.inventories import plan_of

    hosts = {f"s{i}": {"ansible_host": f"10.0.0.{i + 1}"} for i in range(2)}
    sf = {
        "cluster": "g",
        "switches": {"sw": {"model": "generic", "ports": 8, "speed": 400}},
        "cables": [["s0:p1", "sw:1/1"], ["s1:p1", "sw:1/2"]],
    }
    plan = plan_of({"all": {"hosts": hosts, "vars": {"sparkfab": sf}}})
    h = plan.host("s1")
    ok = {i.netdev: [_n("sw", "Ethernet1/2")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, ok)} == {PASS}
    wrong = {i.netdev: [_n("sw", "Ethernet1/1")] for i in h.ifaces}
    assert {r.status for r in lldp.check_host(plan, h, wrong)} == {FAIL}
