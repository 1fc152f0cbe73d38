"""One gathering of a host's facts answers the checks (verify's round trips), with the real
gathering program run on this machine through testinfra's local backend; the gathering is made
of the very facts the checks ask, so nothing they ask goes to the host on its own."""

from __future__ import annotations

import testinfra

from sparkfab.facts import gather
from sparkfab.facts.neighbours import NEIGHBOURS
from sparkfab.resolve import load_plan
from sparkfab.verify import checks
from sparkfab.verify.expect import expect
from tests.conftest import REPO
from tests.doubles.host import Answer, FakeHost


def test_commands_files_and_sysctls_come_from_one_gathering(tmp_path):
    local = testinfra.get_host("local://")
    present = tmp_path / "nccl.env"
    present.write_text("NCCL_IB_HCA=x\n")
    th = gather.prefetch(
        local,
        [
            "echo one",
            "echo oops >&2; exit 3",
            gather.sysctl_command("kernel.pid_max"),
            gather.sysctl_command("kernel.ostype"),
        ],
        [str(present), str(tmp_path / "absent"), str(tmp_path)],  # a directory reads as absent, as EINVAL does
    )
    assert th.check_output("echo one") == "one"
    failed = th.run("echo oops >&2; exit 3")
    assert (failed.rc, failed.stderr) == (3, "oops\n")
    assert isinstance(th.sysctl("kernel.pid_max"), int) and th.sysctl("kernel.ostype") == "Linux"
    assert th.file(str(present)).content_string == "NCCL_IB_HCA=x\n"
    assert not th.file(str(tmp_path / "absent")).exists and not th.file(str(tmp_path)).exists
    assert th.live == []
    # an answer is used once: asked again (a retry), the host answers
    assert th.check_output("echo one") == "one" and th.live == ["echo one"]
    assert th.file("/etc/hostname").exists and th.live == ["echo one", "/etc/hostname"]


def test_a_host_that_cannot_run_the_gathering_is_asked_one_by_one():
    host = FakeHost(answers={"ip -j link show": Answer(0, "[]")})
    th = gather.prefetch(host, ["ip -j link show"], [])
    assert th.check_output("ip -j link show") == "[]" and th.live == ["ip -j link show"]
    assert host.sent[0].startswith("python3 -c ")


def test_the_gathering_names_everything_the_per_host_checks_ask(tmp_path):
    """Every command, sysctl and file the per-host checks read of a ring Spark is in `wanted`:
    answered from the gathering, nothing goes to the host on its own."""
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = plan.hosts[1]
    exp = expect(plan.mode_of(host.name))
    rendered = {f"/etc/sparkfab/{name}": "x\n" for name in ("nccl.env", "launch/glm.json")}
    commands, paths = checks.wanted(plan, host, rendered, exp)
    answers = {c: gather.Reply(0, "[]" if c.startswith(("ip -j", "nft -j")) else "", "") for c in commands}
    th = gather.Prefetched(FakeHost(), answers, dict.fromkeys(paths, "1\n"))
    checks.link_checks(plan, host, th, exp)
    checks.config_checks(plan, host, th, rendered)
    checks.jumbo_pings(plan, host, th)
    checks.rdma(plan, host, th, exp)
    checks.cabling(plan, host, NEIGHBOURS.of(th))
    assert th.live == []


def test_a_neighbour_heard_before_the_carrier_went_is_missing():
    """lldpd may still list what a port heard before its cable was pulled: without carrier the
    port has no neighbour, whatever lldpd says."""
    from tests.doubles.host import ip_link

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = plan.host("spark-329f")
    heard = (REPO / "tests/data/captured/lldpcli-ring-spark329f.json").read_text()
    links = {i.netdev: {"carrier": i.netdev != "enP2p1s0f1np1"} for i in host.ifaces}
    chassis = '{"local-chassis": {"chassis": {"spark-329f": {"id": {"type": "mac", "value": "aa:bb"}}}}}'
    fake = FakeHost(answers={NEIGHBOURS.command(): Answer(0, f"{ip_link(**links)}\n@@\n{chassis}\n@@\n{heard}")})
    failed = [(r.subject, r.actual) for r in checks.cabling(plan, host, NEIGHBOURS.of(fake)) if r.status == "fail"]
    assert failed == [("enP2p1s0f1np1 (p1)", "-")]


def test_a_listing_lldpcli_could_not_write_as_json_is_one_row_not_every_port_missing():
    from tests.doubles.host import ip_link

    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    host = plan.host("spark-329f")
    bad = (REPO / "tests/data/captured/lldpcli-hostile-json.txt").read_text()  # lldpd 1.0.16's own -f json
    fake = FakeHost(answers={NEIGHBOURS.command(): Answer(0, f"{ip_link()}\n@@\n{{}}\n@@\n{bad}")})
    rows = checks.cabling(plan, host, NEIGHBOURS.of(fake))
    assert [(r.subject, r.actual, r.status) for r in rows] == [("lldpd", "unreadable", "fail")]
