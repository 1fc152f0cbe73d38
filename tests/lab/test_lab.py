"""The namespace lab and the real Ansible push, end to end (root)."""

from __future__ import annotations

import json
import os
import shlex

import pytest
import yaml

from sparkfab.lab.spec import shipped_hostname
from sparkfab.paths import lab_dir
from sparkfab.render import graph
from tests.conftest import REPO
from tests.helpers.lab import become_password_file, in_machine, lab, mgmt_ip, requires_lab, silence_sshd, sparkfab, ssh

pytestmark = [pytest.mark.lab, requires_lab]


def _leftovers(cluster: str) -> list[str]:
    from sparkfab.lab import build

    found = build.leftovers(cluster)
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"sf-{cluster}-" in cmd or f"/lab/{cluster}/" in cmd:
                found.append(f"process {pid}: {cmd[:80]}")
    return found


def green_hosts(inventory: str) -> list[str]:
    from sparkfab.resolve import load_plan

    return [h.name for h in load_plan(inventory).hosts]


def _verify(inventory: str, *extra: str) -> dict:
    res = sparkfab("verify", inventory, "--lab", "--format", "json", *extra)
    report = json.loads(res.out)
    failed = [r for r in report["results"] if r["status"] == "fail"]
    assert res.code == 0 and report["ok"], failed
    assert report["counts"]["pass"] > 0
    return report


def _changed(err: str) -> int:
    line = next(x for x in err.splitlines() if x.startswith("apply "))
    return int(line.split("changed=")[1].split()[0])


@pytest.mark.xdist_group("ring4")
@pytest.mark.parametrize("inventory,cluster,hosts", [("inventory/ring4.yml", "ring4", 4)])
def test_full_cycle(inventory, cluster, hosts):
    """lab up -> apply -> apply (changed=0) -> serve -> linkspeed 100e -> 200 -> lab down, nothing
    left. The switched cluster's push and verify share its lab with vLLM at TP8
    (test_lab_vllm.py::test_real_vllm_tp8_behind_the_switch)."""
    with lab(inventory, cluster) as up:
        assert f"{hosts} booted Sparks" in up.err
        first = sparkfab("apply", inventory, "--lab")
        assert first.code == 0, first.err
        assert _changed(first.err) > 0
        # no terminal here: a line per host and step as the run goes, before the table at its end
        steps = [ln.split(": ", 2) for ln in first.err.splitlines() if ln.startswith(f"site.yml on {cluster}: ")]
        assert {s[1] for s in steps} == set(green_hosts(inventory)), first.err[-2000:]
        for name in green_hosts(inventory):
            mine = [s[2].split(" | ")[0] for s in steps if s[1] == name]
            assert mine[0] == "Fabric" and {"Files", "Netplan"} <= set(mine), (name, mine)
        again = sparkfab("apply", inventory, "--lab", "-q")
        assert again.code == 0 and _changed(again.err) == 0, again.err
        host = "spark-01" if hosts == 8 else "spark-355d"
        assert "9000" in ssh(cluster, host, "cat /sys/class/net/enP2p1s0f1np1/mtu").stdout
        green = _verify(inventory, "--collective")
        assert green["collective"]["glm"]["ok"] and green["collective"]["glm"]["backend"] == "gloo"
        assert {r["host"] for r in green["results"] if r["check"] == "reach"} == set(green_hosts(inventory))
        started = sparkfab("serve", "start", inventory, "--lab")
        assert started.code == 0, started.err
        assert f"serve.yml on {cluster}: {host}: Serve | " in started.err, started.err[-2000:]
        pid_before = ssh(cluster, host, "cat /run/sparkfab/glm.pid").stdout.strip()
        flip = sparkfab("linkspeed", inventory, "100e", "--lab", "-q")
        assert flip.code == 0, flip.err
        assert "-> =rocep1s0f" in flip.out and f"serving restarted on {hosts} host(s)" in flip.err
        env = ssh(cluster, host, "grep ^NCCL_IB_HCA= /etc/sparkfab/nccl.env").stdout
        assert "roceP2" not in env and "rocep1s0f" in env
        pid_after = ssh(cluster, host, "cat /run/sparkfab/glm.pid").stdout.strip()
        assert pid_after and pid_after != pid_before  # the engine really restarted with the new env
        assert ssh(cluster, host, f"kill -0 {pid_after}").returncode == 0
        assert _verify(inventory)["link_speed"] == "100e"
        back = sparkfab("linkspeed", inventory, "200", "--lab", "-q")
        assert back.code == 0 and "roceP2p1s0f" in ssh(cluster, host, "cat /etc/sparkfab/nccl.env").stdout
        rank0 = json.loads(ssh(cluster, host, "cat /etc/sparkfab/launch/glm.json").stdout)
        assert rank0["runtime"] == "process"
    assert _leftovers(cluster) == []


@pytest.mark.xdist_group("ring4")
def test_check_diff_on_a_fresh_lab_changes_nothing():
    with lab("inventory/ring4.yml", "ring4"):
        res = sparkfab("apply", "inventory/ring4.yml", "--lab", "--check", "--diff", "-q")
        assert res.code == 0, res.err
        assert "+++ spark-329f:/etc/sparkfab/nccl.env (planned)" in res.out
        assert "+network:" in res.out  # the netplan file's diff
        probe = ssh(
            "ring4",
            "spark-329f",
            "ls -A /etc/netplan; ls -d /etc/sparkfab 2>/dev/null; ip -4 -o addr show | grep -c 192.168 || true",
        )
        assert probe.stdout.split() == ["0"], probe.stdout  # no netplan file, no /etc/sparkfab, no address


@pytest.mark.xdist_group("pair1")
def test_a_site_runs_the_collection_with_plain_ansible_playbook(tmp_path):
    """Without the CLI, as a site would: the collection `sparkfab collection` builds, installed
    by ansible-galaxy into an empty collections path; its playbook run by its fully qualified
    name configures the fabric, and the site's own playbook that imports one of its roles puts
    back the NCCL environment taken away by hand."""
    import subprocess
    import sys
    from pathlib import Path

    from sparkfab.paths import lab_dir
    from tests.conftest import REPO

    bindir = Path(sys.executable).parent
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")},
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),  # its ssh arguments, as sparkfab's runs have them
        "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"),
        "PATH": f"{bindir}:{os.environ['PATH']}",
    }

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)

    built = run(str(bindir / "sparkfab"), "collection", "-o", str(tmp_path / "dist"), "-q")
    assert built.returncode == 0, built.stderr
    installed = run(
        "ansible-galaxy", "collection", "install", "-p", str(tmp_path / "collections"), built.stdout.strip()
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    (tmp_path / "site.yml").write_text(
        "- name: The site's own play\n"
        "  hosts: all\n"
        "  gather_facts: false\n"
        "  become: true\n"
        "  tasks:\n"
        "    - name: The fabric's files, from sparkfab's collection\n"
        "      ansible.builtin.import_role:\n"
        "        name: sparkfab.fabric.sparkfab_files\n"
    )
    with lab("inventory/pair-1cable.yml", "pair1"):
        out = tmp_path / "tree"
        assert sparkfab("render", str(lab_dir("pair1") / "inventory.yml"), "-o", str(out)).code == 0
        res = run("ansible-playbook", "-i", str(out / "inventory.yml"), "sparkfab.fabric.site")
        assert res.returncode == 0, res.stdout[-3000:]
        assert "failed=0" in res.stdout and "unreachable=0" in res.stdout
        assert "192.168.100.1/24" in ssh("pair1", "spark-a", "ip -4 -o addr").stdout
        nccl = "/etc/sparkfab/nccl.env"
        want = ssh("pair1", "spark-a", f"cat {nccl}").stdout
        assert "NCCL_" in want
        assert ssh("pair1", "spark-a", f"echo '# by-hand' >>{nccl}").returncode == 0
        own = run("ansible-playbook", "-i", str(out / "inventory.yml"), "--limit", "spark-a", "site.yml")
        assert own.returncode == 0, own.stdout[-3000:]
        assert "Files | NCCL environment" in own.stdout and "changed=1" in own.stdout, own.stdout[-3000:]
        assert ssh("pair1", "spark-a", f"cat {nccl}").stdout == want


@pytest.mark.xdist_group("ring4")
def test_unreachable_host_is_named_and_others_are_applied():

    with lab("inventory/ring4.yml", "ring4"):
        silence_sshd("ring4", "spark-c049")
        res = sparkfab("apply", "inventory/ring4.yml", "--lab", "-q")
        assert res.code == 3
        assert "spark-c049: unreachable" in res.err
        assert "spark-329f" not in res.err.split("deploy failed on:")[1]
        assert "192.168.100.1/24" in ssh("ring4", "spark-329f", "ip -4 -o addr").stdout
        # what the lab host sees of it, with the error: running, addressed, and no sshd
        view = res.err.split("the lab's view of spark-c049: ", 1)[-1]
        assert view.startswith("its machine runs (init ") and "nothing listens on port 22" in view, res.err
        checked = sparkfab("verify", "inventory/ring4.yml", "--lab", "--format", "json")
        ssh_rows = [r for r in json.loads(checked.out)["results"] if r["check"] == "ssh"]
        assert [r["host"] for r in ssh_rows] == ["spark-c049"], ssh_rows
        assert "the lab's view: its machine runs" in ssh_rows[0]["detail"], ssh_rows
        assert "nothing listens on port 22" in ssh_rows[0]["detail"], ssh_rows


@pytest.mark.xdist_group("tri3")
def test_dry_run_creates_nothing():
    from sparkfab.lab import build

    build.down("tri3")
    res = sparkfab("lab", "up", "inventory/triangle.yml", "--dry-run")
    assert res.code == 0
    assert (
        "veth sf-tri3-spark-1:enp1s0f0np0 <-> sf-tri3-@wires:h0p0r0 (port of c0, MTU 9000)  [cables[0] root 0]"
        in res.out
    )
    assert build.leftovers("tri3") == []


@pytest.mark.xdist_group("pair2")
def test_down_after_a_crash_finds_everything_by_name():
    from sparkfab.paths import lab_dir

    with lab("inventory/pair-2cables.yml", "pair2"):
        (lab_dir("pair2") / "state.json").unlink()  # as if `lab up` had died half-way
    assert _leftovers("pair2") == []


@pytest.mark.xdist_group("sw8")
def test_verify_names_swapped_and_cut_cables(tmp_path):
    inv = "inventory/switch8-crs804-200.yml"
    with lab(inv, "sw8"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        res = sparkfab("lab", "wire", inv, "--swap", "cables[2]", "cables[3]")
        assert (
            res.code == 0
            and "spark-03:enP2p1s0f1np1, spark-03:enp1s0f1np1 now meets MikroTik:bridge-fabric/qsfp56-dd-2-5" in res.out
        )
        swapped = sparkfab("verify", inv, "--lab", "--format", "json")
        assert swapped.code == 4
        assert "verify: links, addresses, sysctls, firewall, files, jumbo pings, RDMA on 8 hosts (" in swapped.err
        assert "verify: cabling, engine flags, images, serving (" in swapped.err
        bad = {
            (r["host"], r["subject"], r["expected"], r["actual"])
            for r in json.loads(swapped.out)["results"]
            if r["check"] == "cabling" and r["status"] == "fail"
        }
        # the switch announces its RouterOS identity and names a 2x200G leg by its first lane
        # (a bridge port: RouterOS names it by its bridge, the lab's `bridge-fabric`)
        assert bad == {
            ("spark-03", "enp1s0f1np1 (p1)", "MikroTik:qsfp56-dd-2-1", "MikroTik:bridge-fabric/qsfp56-dd-2-5"),
            ("spark-03", "enP2p1s0f1np1 (p1)", "MikroTik:qsfp56-dd-2-1", "MikroTik:bridge-fabric/qsfp56-dd-2-5"),
            ("spark-04", "enp1s0f1np1 (p1)", "MikroTik:qsfp56-dd-2-5", "MikroTik:bridge-fabric/qsfp56-dd-2-1"),
            ("spark-04", "enP2p1s0f1np1 (p1)", "MikroTik:qsfp56-dd-2-5", "MikroTik:bridge-fabric/qsfp56-dd-2-1"),
        }
        cut = sparkfab("lab", "wire", inv, "--cut", "cables[5].r1")
        assert cut.code == 0
        found = sparkfab("verify", inv, "--lab", "--format", "json")
        dead = json.loads(found.out)["results"]
        # the picture of this run: the cut cable red with its failed checks, the others green
        (tmp_path / "verify.json").write_text(found.out)
        drawn = sparkfab("graph", inv, "--verify", str(tmp_path / "verify.json"), "-o", str(tmp_path / "sw8.svg"))
        assert drawn.code == 0, drawn.err
        picture = (tmp_path / "sw8.svg").read_text()
        assert "FAILED: cabling, carrier" in picture and picture.count(graph.FAIL_COLOUR) >= 2
        assert graph.PASS_COLOUR in picture
        named = {(r["check"], r["host"], r["subject"]) for r in dead if r["status"] == "fail"}
        assert ("carrier", "spark-06", "enP2p1s0f1np1") in named
        assert ("cabling", "spark-06", "enP2p1s0f1np1 (p1)") in named
        links = ssh("sw8", "spark-06", "ip -br link").stdout
        assert "enP2p1s0f1np1" in links and "NO-CARRIER" in links
    with lab(inv, "sw8"):  # down and up again: green
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        _verify(inv)


@pytest.mark.xdist_group("ring4")
def test_sampling_veths_during_a_collective_shows_bursts(tmp_path):
    """In the lab: 1 ms samples of one Spark's fabric netdevs while a gloo all-reduce runs."""
    import subprocess
    import sys

    from sparkfab.lab.rates import rate_gbps
    from sparkfab.measure.counters import sampler, traffic

    inv = "inventory/ring4.yml"
    out = tmp_path / "ring.smp"
    with lab(inv, "ring4"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        devs = "enp1s0f0np0,enp1s0f1np1,enP2p1s0f0np0,enP2p1s0f1np1"
        proc = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                "sf-ring4-spark-329f",
                sys.executable,
                "-m",
                "sparkfab",
                "sample",
                "--source",
                "netdev",
                "--devices",
                devs,
                "--duration",
                "20",
                "-o",
                str(out),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        res = sparkfab("verify", inv, "--lab", "--collective", "--sizes", "1M,16M,32M", "--format", "json")
        assert res.code == 0, res.out[-2000:]
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    s = sampler.read(out)
    sr = traffic.series(s)
    first = sum(v * c["unit"] for v, c in zip(s.values[0], s.counters, strict=True) if c["direction"] == "tx")
    last = sum(v * c["unit"] for v, c in zip(s.values[-1], s.counters, strict=True) if c["direction"] == "tx")
    assert sr.total["tx"] == last - first > 100 * 2**20  # the sweep moved well over 100 MiB
    _, per_ms = traffic.rates(sr, 0.001)
    assert round(sum(per_ms) * 0.001 * 1e9 / 8) == last - first  # spreading kept every byte
    peaks = {round(r.interval_s, 3): r.peak_gbps for r in traffic.peaks(sr, [0.001, 0.1])}
    whole = traffic.peaks(sr, [])[-1].peak_gbps
    # the sweep's busy milliseconds run at the shaped rate, well above its average (it waits
    # between sizes), and leave on one netdev at a time (its 100 ms peak is one netdev's rate).
    # The shaper is a cable's: no millisecond carries more than that rate and two jumbo frames
    # (with half a sample's jitter). The lab's earlier 128 KiB buckets: 1.10 Gb/s in this test's
    # busiest millisecond, against 0.52 now (both at 400 Mbit/s, 2026-12-07).
    rate = rate_gbps("200")
    cable = rate + 2 * (9216 + 14) * 8 / 1e6
    assert peaks[0.001] > 2 * whole and peaks[0.001] > 0.9 * rate, (peaks, whole)
    assert peaks[0.1] < 1.05 * rate, peaks
    assert peaks[0.001] < 1.5 * cable, (peaks, cable)


def _mgmt_ips(cluster: str) -> list[str]:
    from sparkfab.lab.state import LabState
    from sparkfab.paths import lab_dir

    return [n.mgmt_ip for n in LabState.read(lab_dir(cluster)).spec.sparks]


def _cable_set(cables) -> set[frozenset[str]]:
    return {frozenset(c["ends"] if isinstance(c, dict) else c) for c in cables}


@pytest.mark.parametrize(
    "inventory,cluster",
    [
        pytest.param(inv, cluster, marks=pytest.mark.xdist_group(cluster))
        for inv, cluster in (
            ("inventory/ring4.yml", "ring4"),
            ("inventory/triangle.yml", "tri3"),
            ("inventory/switch8-crs804-200.yml", "sw8"),
        )
    ],
)
def test_discover_from_management_addresses(tmp_path, inventory, cluster):
    """The discovered cables equal the originals and give the same ranks."""
    import yaml

    from sparkfab.paths import lab_dir
    from sparkfab.resolve import load_plan

    secret = become_password_file(tmp_path)  # the last Spark's owner is asked for it by sudo
    with lab(inventory, cluster):
        out = tmp_path / "found.yml"
        res = sparkfab(
            "discover",
            *_mgmt_ips(cluster),
            "--ssh-config",
            str(lab_dir(cluster) / "ssh_config"),
            "--become-password-file",
            str(secret),
            "--cluster",
            cluster,
            "-o",
            str(out),
        )
        assert res.code == 0, res.err
    found = yaml.safe_load(out.read_text())["all"]["vars"]["sparkfab"]
    original = yaml.safe_load((REPO / inventory).read_text())["all"]["vars"]["sparkfab"]
    # a switch no inventory named yet is written under the name it announces
    announced = {k: v.get("lldp_name", k) for k, v in (original.get("switches") or {}).items()}
    # and a Spark, from its address alone, by its hostname as shipped (not the example's key)
    hosts = load_plan(inventory).instances[0].hosts
    announced |= {h: shipped_hostname(cluster, h) for h in hosts}
    ends = [c["ends"] if isinstance(c, dict) else c for c in original["cables"]]
    expected = [[announced.get(e.split(":")[0], e.split(":")[0]) + ":" + e.split(":")[1] for e in c] for c in ends]
    assert _cable_set(found["cables"]) == _cable_set(expected)
    assert sparkfab("validate", str(out)).code == 0
    assert load_plan(str(out)).instances[0].hosts == tuple(announced[h] for h in hosts)


@pytest.mark.xdist_group("ring4")
def test_discover_after_a_swap_and_with_a_dead_spark(tmp_path):
    import yaml

    from sparkfab.paths import lab_dir

    inv = "inventory/ring4.yml"
    with lab(inv, "ring4"):
        assert sparkfab("lab", "wire", inv, "--swap", "cables[1]", "cables[3]").code == 0
        merged = tmp_path / "merged.yml"
        res = sparkfab("discover", "--inventory", inv, "--lab", "-o", str(merged))
        assert res.code == 0, res.err
        text = merged.read_text()
        assert text.startswith("# yaml-language-server") and "control traffic routed over the fabric" in text
        cables = yaml.safe_load(text)["all"]["vars"]["sparkfab"]["cables"]
        assert _cable_set(cables) == {
            frozenset({"spark-329f:p1", "spark-355d:p1"}),
            frozenset({"spark-355d:p0", "spark-3d38:p1"}),
            frozenset({"spark-3d38:p0", "spark-c049:p1"}),
            frozenset({"spark-c049:p0", "spark-329f:p0"}),
        }
        assert {
            "ends": ["spark-329f:p1", "spark-355d:p1"],
            "subnets": ["192.168.100.0/24", "192.168.102.0/24"],
        } in cables
    secret = become_password_file(tmp_path)  # the last Spark's login is not root: sudo asks for it
    with lab(inv, "ring4"):
        silence_sshd("ring4", "spark-c049")
        res = sparkfab(
            "discover",
            *_mgmt_ips("ring4"),
            "--ssh-config",
            str(lab_dir("ring4") / "ssh_config"),
            "--become-password-file",
            str(secret),
            "--format",
            "json",
        )
        data = json.loads(res.out)
        assert res.code == 4
        assert any(o.startswith(f"{mgmt_ip('ring4', 'spark-c049')} (") and "does not answer" in o for o in data["odd"])
        # its cables are still found, from the other ends; every Spark named by its hostname
        original = yaml.safe_load((REPO / inv).read_text())["all"]["vars"]["sparkfab"]["cables"]
        named = {h: shipped_hostname("ring4", h) for h in ("spark-329f", "spark-355d", "spark-3d38", "spark-c049")}
        ends = [c["ends"] if isinstance(c, dict) else c for c in original]
        renamed = [[named[e.split(":")[0]] + ":" + e.split(":")[1] for e in c] for c in ends]
        assert _cable_set(data["cables"]) == _cable_set(renamed)
        silent = named["spark-c049"]
        assert sum(f"seen from one end only ({silent} did not answer" in o for o in data["odd"]) == 2
        # --limit leaves the silent Spark out: not asked, its cables named by what it announces
        limited = tmp_path / "limited.yml"
        res = sparkfab("discover", "--inventory", inv, "--lab", "--limit", "all:!spark-c049", "-o", str(limited))
        assert res.code == 0 and "3 of 4 Sparks" in res.err, res.err
        assert yaml.safe_load(limited.read_text())["all"]["vars"]["sparkfab"]["cables"] == original


@pytest.mark.xdist_group("pair1")
def test_netplan_is_not_reapplied_under_a_running_engine(tmp_path):
    """Re-applying netplan changes the RoCE GID tables and kills a live engine: refuse."""
    inv = tmp_path / "pair.yml"
    inv.write_text((REPO / "inventory/pair-1cable.yml").read_text())
    with lab(str(inv), "pair1"):
        assert sparkfab("apply", str(inv), "--lab", "-q").code == 0
        assert sparkfab("serve", "start", str(inv), "--lab", "-q").code == 0
        inv.write_text(inv.read_text().replace("mtu: 9000", "mtu: 8000"))
        res = sparkfab("apply", str(inv), "--lab", "-q")
        assert res.code == 3
        assert "re-applying netplan changes the RoCE GID tables and kills it" in res.err, res.err
        assert "9000" in ssh("pair1", "spark-a", "cat /sys/class/net/enp1s0f1np1/mtu").stdout
        assert sparkfab("serve", "stop", str(inv), "--lab", "-q").code == 0
        assert sparkfab("apply", str(inv), "--lab", "-q").code == 0
        assert "8000" in ssh("pair1", "spark-a", "cat /sys/class/net/enp1s0f1np1/mtu").stdout


@pytest.mark.xdist_group("pair2")
def test_rate_shapes_a_cable():
    inv = "inventory/pair-2cables.yml"
    with lab(inv, "pair2"):
        res = sparkfab("lab", "wire", inv, "--rate", "cables[1]", "1gbit")
        assert res.code == 0 and res.out.count("shaped") == 4  # both twins at both ends: one wire
        qdisc = ssh("pair2", "spark-a", "tc qdisc show dev enp1s0f1np1").stdout
        assert "tbf" in qdisc and "rate 1Gbit" in qdisc


@pytest.mark.xdist_group("pair2")
def test_a_flip_is_all_or_nothing_with_a_silent_or_a_failing_spark():
    """linkspeed with one Spark silent on the network: every host is checked first, so the other
    keeps its NCCL environment and its engine, the lab's rate and the recorded speed stay (and
    `serve restart` leaves the instance alone rather than start it without a rank); once
    the Spark answers again the same flip goes through. A Spark that fails in the push itself
    (its NCCL file cannot be replaced) stops the flip before serving is touched, and the Spark
    that did change gets its old file back: both run the recorded speed."""
    from sparkfab.paths import lab_dir

    inv, cluster = "inventory/pair-2cables.yml", "pair2"
    env = "grep ^NCCL_IB_HCA= /etc/sparkfab/nccl.env"
    with lab(inv, cluster):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        assert sparkfab("serve", "start", inv, "--lab", "-q").code == 0
        before = ssh(cluster, "spark-a", env).stdout
        pid = ssh(cluster, "spark-a", "cat /run/sparkfab/llama.pid").stdout.strip()
        rate = ssh(cluster, "spark-a", "tc qdisc show dev enp1s0f0np0").stdout
        # silent on the network: ssh packets dropped (the connection Ansible keeps open included)
        drop = ["iptables", "-w", "-I", "INPUT", "-p", "tcp", "--dport", "22", "-j", "DROP"]
        assert in_machine(cluster, "spark-b", *drop).returncode == 0
        flip = sparkfab("linkspeed", inv, "100e", "--lab", "-q")
        assert flip.code == 3, flip.err
        assert "linkspeed 100e changed nothing" in flip.err and "spark-b: unreachable" in flip.err, flip.err
        assert ssh(cluster, "spark-a", env).stdout == before and "roceP2p1s0f0" in before
        assert ssh(cluster, "spark-a", f"kill -0 {pid}").returncode == 0  # still the same engine
        assert ssh(cluster, "spark-a", "tc qdisc show dev enp1s0f0np0").stdout == rate
        recorded = lab_dir(cluster) / "state" / "link_speed"
        assert not recorded.exists() or recorded.read_text().strip() == "200"
        # nor is serving restarted without all its ranks: the rank that answers keeps its engine
        restart = sparkfab("serve", "restart", inv, "--lab", "-q")
        assert restart.code == 3, restart.err
        assert "llama needs every rank, and spark-b did not answer" in restart.err, restart.err
        assert ssh(cluster, "spark-a", f"kill -0 {pid}").returncode == 0
        assert in_machine(cluster, "spark-b", "iptables", "-w", "-D", *drop[3:]).returncode == 0
        again = sparkfab("linkspeed", inv, "100e", "--lab", "-q")
        assert again.code == 0, again.err
        assert "roceP2" not in ssh(cluster, "spark-a", env).stdout
        assert recorded.read_text().strip() == "100e"
        # fails in the push: spark-b's file is a directory now (what the flip replaces it with
        # cannot be renamed over it), after the check of every host passed
        at_100e = ssh(cluster, "spark-a", env).stdout
        pid = ssh(cluster, "spark-a", "cat /run/sparkfab/llama.pid").stdout.strip()
        block = "mv /etc/sparkfab/nccl.env /root/nccl.env && mkdir -p /etc/sparkfab/nccl.env/x"
        assert ssh(cluster, "spark-b", block).returncode == 0
        back = sparkfab("linkspeed", inv, "200", "--lab", "-q")
        assert back.code == 3, back.err
        assert "failed after it changed spark-a: rolling them back to 100e" in back.err, back.err
        assert "linkspeed 200 rolled back: spark-a run 100e again, as recorded" in back.err, back.err
        assert ssh(cluster, "spark-a", env).stdout == at_100e
        assert ssh(cluster, "spark-a", f"kill -0 {pid}").returncode == 0  # serving not touched
        assert recorded.read_text().strip() == "100e"
        unblock = "rm -r /etc/sparkfab/nccl.env && mv /root/nccl.env /etc/sparkfab/nccl.env"
        assert ssh(cluster, "spark-b", unblock).returncode == 0
        done = sparkfab("linkspeed", inv, "200", "--lab", "-q")
        assert done.code == 0, done.err
        assert ssh(cluster, "spark-a", env).stdout == before and recorded.read_text().strip() == "200"


@pytest.mark.xdist_group("pair1")
def test_secrets_reach_the_engine_from_a_root_only_file(tmp_path, monkeypatch):
    """A secret named on the instance travels from apply's environment into a 0600 root file on
    each Spark and from there into the engine's environment, and into no rendered file and
    nothing the run keeps (ansible-runner's artifacts: its events, with every task's result)."""
    secret = "s3cr3t-$(touch /tmp/sparkfab-canary) 'q'"
    monkeypatch.setenv("SPARKFAB_LAB_SECRET", secret)
    data = yaml.safe_load((REPO / "inventory/pair-1cable.yml").read_text())
    for inst in data["all"]["vars"]["sparkfab"]["instances"].values():
        inst["secrets"] = ["SPARKFAB_LAB_SECRET"]
    inv = tmp_path / "pair.yml"
    inv.write_text(yaml.safe_dump(data))
    with lab(str(inv), "pair1"):
        assert sparkfab("apply", str(inv), "--lab", "-q").code == 0
        stat = ssh("pair1", "spark-a", "stat -c '%a %U %G' /etc/sparkfab/secrets.env").stdout.split()
        assert stat == ["600", "root", "root"]
        kept = [p for p in (lab_dir("pair1") / "state").rglob("*") if p.is_file()]
        assert kept and not [str(p) for p in kept if b"s3cr3t" in p.read_bytes()]
        assert sparkfab("serve", "start", str(inv), "--lab", "-q").code == 0
        inst = next(iter(data["all"]["vars"]["sparkfab"]["instances"]))
        environ = ssh("pair1", "spark-b", f"tr '\\0' '\\n' < /proc/$(cat /run/sparkfab/{inst}.pid)/environ")
        assert f"SPARKFAB_LAB_SECRET={secret}" in environ.stdout.splitlines()
        assert ssh("pair1", "spark-b", "test -e /tmp/sparkfab-canary").returncode != 0
        readable = ssh("pair1", "spark-b", f"grep -rlF {shlex.quote('s3cr3t')} /etc/sparkfab /etc/netplan || true")
        assert readable.stdout.split() == ["/etc/sparkfab/secrets.env"]
        assert sparkfab("serve", "stop", str(inv), "--lab", "-q").code == 0
