"""Another apply converges a host from the state it is in, not from the record of the last run:
a run that died after installing netplan's file but before applying it, and kernel state taken
away by hand (an address, the MTU, a sysctl, the firewall table) are put right; once right,
apply says changed=0, and `--check` names the drift without touching it."""

from __future__ import annotations

import json
import re
import shlex
import signal
import socket
import subprocess
import time
import warnings

import pytest

from sparkfab.paths import lab_dir
from tests.conftest import REPO
from tests.helpers.lab import in_machine, lab, mgmt_ip, requires_lab, sparkfab, ssh, started

pytestmark = [pytest.mark.lab, requires_lab]


def _changed(err: str) -> int:
    m = re.search(r"changed=(\d+)", err)
    assert m, err
    return int(m.group(1))


def _verify(inv: str) -> tuple[int, list[dict]]:
    res = sparkfab("verify", inv, "--lab", "--format", "json")
    report = json.loads(res.out)
    return res.code, [r for r in report["results"] if r["status"] == "fail"]


@pytest.mark.xdist_group("pair1")
def test_a_run_that_died_before_netplan_apply_is_finished_by_the_next(tmp_path):
    """The file in place, never applied (Ctrl-C or a lost host between the two tasks): the file
    is unchanged for the next run, which applies it because the addresses are not there."""
    inv = str(REPO / "inventory/pair-1cable.yml")
    with lab(inv, "pair1"):
        out = tmp_path / "tree"
        assert sparkfab("render", "inventory/pair-1cable.yml", "-o", str(out)).code == 0
        text = (out / "spark-a/etc/netplan/60-sparkfab.yaml").read_text()
        dest = "/etc/netplan/60-sparkfab.yaml"
        put = f"mkdir -p /etc/netplan && cat >{dest} <<'EOF'\n{text}EOF\nchmod 600 {dest}"
        assert ssh("pair1", "spark-a", put).returncode == 0
        assert "192.168." not in ssh("pair1", "spark-a", "ip -4 -o addr show dev enp1s0f1np1").stdout
        res = sparkfab("apply", inv, "--lab", "-q")
        assert res.code == 0, res.err
        code, fails = _verify(inv)
        assert code == 0, fails


@pytest.mark.xdist_group("ring4")
def test_kernel_state_taken_away_is_put_back_and_checked_first(tmp_path):
    inv = str(REPO / "inventory/ring4.yml")
    with lab(inv, "ring4"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        again = sparkfab("apply", inv, "--lab", "-q")
        assert again.code == 0 and _changed(again.err) == 0, again.err
        damage = (
            "ip -4 addr flush dev enp1s0f0np0; ip link set enP2p1s0f1np1 mtu 1500; "
            "sysctl -qw net.ipv4.ip_forward=0; nft delete table inet sparkfab"
        )
        assert ssh("ring4", "spark-355d", damage).returncode == 0
        preview = sparkfab("apply", inv, "--lab", "--check", "-q")
        assert preview.code == 0 and _changed(preview.err) > 0, preview.err
        # --check changed nothing
        assert ssh("ring4", "spark-355d", "sysctl -n net.ipv4.ip_forward").stdout.strip() == "0"
        fixed = sparkfab("apply", inv, "--lab", "-q")
        assert fixed.code == 0 and _changed(fixed.err) > 0, fixed.err
        probe = "sysctl -n net.ipv4.ip_forward; cat /sys/class/net/enP2p1s0f1np1/mtu; nft list table inet sparkfab"
        state = ssh("ring4", "spark-355d", probe)
        assert state.stdout.split("\n")[:3] == ["1", "9000", "table inet sparkfab {"], state.stdout
        code, fails = _verify(inv)
        assert code == 0, fails
        settled = sparkfab("apply", inv, "--lab", "-q")
        assert settled.code == 0 and _changed(settled.err) == 0, settled.err


@pytest.mark.xdist_group("pair1")
def test_two_operators_at_once_one_is_refused(tmp_path):
    """A flip while an apply runs: the second is refused at once, naming the first."""
    inv = str(REPO / "inventory/pair-1cable.yml")
    with lab(inv, "pair1"):
        first = started("apply", inv, "--lab", "-q")
        try:
            lock = lab_dir("pair1") / "state" / "lock"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and '"verb": "apply"' not in (lock.read_text() if lock.exists() else ""):
                time.sleep(0.1)
            second = sparkfab("linkspeed", inv, "100e", "--lab", "-q")
            assert second.code == 5 and "cluster pair1 is busy: `apply`" in second.err, second.err
        finally:
            _, err = first.communicate(timeout=600)
        assert first.returncode == 0, err
        code, fails = _verify(inv)
        assert code == 0, fails


@pytest.mark.xdist_group("pair2")
def test_ctrl_c_during_an_apply_ends_the_whole_run_and_the_next_apply_converges():
    """Ctrl-C while apply runs: the per-host table so far, exit 130, no ansible-playbook or worker
    of the run left on this machine; the next apply finishes the job and verify is green."""
    from sparkfab import proc

    inv = str(REPO / "inventory/pair-2cables.yml")
    with lab(inv, "pair2"):
        run = started("apply", inv, "--lab")
        try:
            seen: set[int] = set()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(seen) < 3:  # ansible-playbook and its workers
                seen |= set(proc.descendants(run.pid))
                time.sleep(0.05)
            assert len(seen) >= 3, "apply never started its workers"
            time.sleep(1)
            seen |= set(proc.descendants(run.pid))
            run.send_signal(signal.SIGINT)
            _, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 130, err[-2000:]
        assert "interrupted, ansible-playbook ended" in err and "sparkfab: interrupted" in err, err[-2000:]
        left = [p for p in seen if proc.alive(p)]
        assert left == [], f"processes of the run still there: {left}"
        # Twice in clean-clone CI runs (never here) a Spark's port 22 did not answer for the 10 s
        # of ssh's ConnectTimeout right after the Ctrl-C, with the lab's view clean once it had
        # failed; the next apply is what this test is about, so it starts once both answer, and
        # a slow answer is said as a warning with what the lab saw at the time.
        for host in ("spark-a", "spark-b"):
            took, view = _until_ssh_answers("pair2", host, 60)
            if took > 2:
                warnings.warn(
                    f"{host} answered ssh {took:.1f} s after the Ctrl-C; the lab's view first: {view}", stacklevel=1
                )
        again = sparkfab("apply", inv, "--lab", "-q")
        # on failure, also what the interrupted apply had seen of each Spark (its table)
        assert again.code == 0, f"{again.err}\nthe interrupted apply said:\n{err[-3000:]}"
        code, fails = _verify(inv)
        assert code == 0, fails


def _until_ssh_answers(cluster: str, host: str, seconds: float) -> tuple[float, str]:
    """Seconds until `host`'s port 22 accepts a connection, and the lab's view of it when it
    first did not (or "")."""
    from sparkfab.lab import probe
    from sparkfab.lab.state import LabState

    ip, t0, view = mgmt_ip(cluster, host), time.monotonic(), ""
    while True:
        try:
            socket.create_connection((ip, 22), timeout=1).close()
            return time.monotonic() - t0, view
        except OSError:
            if not view:
                view = probe.unreachable(LabState.read(lab_dir(cluster)).spec, host)
            assert time.monotonic() - t0 < seconds, f"{host} did not answer ssh within {seconds} s: {view}"
            time.sleep(0.2)


@pytest.mark.xdist_group("pair1")
def test_serve_status_a_dead_rank_fails_verify_and_start_twice_is_one_engine():
    inv = str(REPO / "inventory/pair-1cable.yml")
    with lab(inv, "pair1"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        assert sparkfab("serve", "start", inv, "--lab", "-q").code == 0
        pids = {h: ssh("pair1", h, "cat /run/sparkfab/llama.pid").stdout.strip() for h in ("spark-a", "spark-b")}
        again = sparkfab("serve", "start", inv, "--lab", "-q")  # running: left alone
        assert again.code == 0, again.err
        assert {h: ssh("pair1", h, "cat /run/sparkfab/llama.pid").stdout.strip() for h in pids} == pids
        status = sparkfab("serve", "status", inv, "--lab", "--format", "json")
        assert status.code == 0, status.err
        doc = json.loads(status.out)["instances"]["llama"]
        assert doc["state"] == "serving" and [r["state"] for r in doc["ranks"]] == ["running", "running"]
        # the engine dies on rank 1's Spark (not through serve stop)
        kill = f"python3 -c 'import os, signal; os.killpg({pids['spark-b']}, signal.SIGKILL)'"
        assert ssh("pair1", "spark-b", kill).returncode == 0
        status = sparkfab("serve", "status", inv, "--lab", "--format", "json")
        assert status.code == 4
        ranks = json.loads(status.out)["instances"]["llama"]["ranks"]
        assert [r["state"] for r in ranks] == ["running", "dead"]
        code, fails = _verify(inv)
        assert code == 4 and [(f["check"], f["host"], f["actual"]) for f in fails] == [("engine", "spark-b", "dead")]
        assert sparkfab("serve", "restart", inv, "--lab", "-q").code == 0
        assert sparkfab("serve", "status", inv, "--lab").code == 0
        code, fails = _verify(inv)
        assert code == 0, fails
        # an engine that exits while loading ends serve start at once, with the reason from its log
        assert sparkfab("serve", "stop", inv, "--lab", "-q").code == 0
        fail = 'raise RuntimeError("no checkpoint at /models/x")'
        broken = f"#!/bin/sh\necho loading weights\nexec python3 -c '{fail}'\n"
        plant = f"printf '%s' {shlex.quote(broken)} > /etc/sparkfab/launch/llama.sh"
        assert ssh("pair1", "spark-a", plant).returncode == 0
        began = time.monotonic()
        res = sparkfab("serve", "start", inv, "--lab", "-q")
        took = time.monotonic() - began
        assert res.code != 0 and "exited before it was healthy" in res.err, res.err
        assert "RuntimeError: no checkpoint at /models/x" in res.err, res.err
        assert took < 120, f"serve start waited {took:.0f} s for an engine that had exited"


@pytest.mark.xdist_group("pair1")
def test_a_changed_host_key_is_refused_by_apply_as_by_verify():
    """ansible-runner turns host-key checking off unless told: apply must refuse a Spark whose
    key changed (a reinstall, or another machine at its address), with the command that accepts it."""
    inv = str(REPO / "inventory/pair-1cable.yml")
    with lab(inv, "pair1"):
        new_key = (
            "rm -f /etc/ssh/ssh_host_ed25519_key* && ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key"
            " && systemctl restart ssh"
        )
        assert ssh("pair1", "spark-b", new_key).returncode == 0
        # the master connection made before the change would carry on: close it
        config = str(lab_dir("pair1") / "ssh_config")
        subprocess.run(["ssh", "-F", config, "-O", "exit", "spark-b"], capture_output=True)
        res = sparkfab("apply", inv, "--lab", "-q")
        assert res.code == 3, res.err
        assert "spark-b: refused: its SSH host key is not the one known for" in res.err and "ssh-keygen -R" in res.err
        assert ssh("pair1", "spark-a", "test -e /etc/netplan/60-sparkfab.yaml").returncode == 0  # the other one went on
        code, fails = _verify(inv)
        assert code == 4 and any(f["host"] == "spark-b" and f["check"] == "ssh" for f in fails), fails


@pytest.mark.xdist_group("pair1")
def test_a_flip_that_ended_after_it_stopped_serving_is_finished_by_the_next():
    """A flip stops serving, then starts it at the new speed; one that ends in between (Ctrl-C,
    a lost controller) leaves the engines stopped and says so on each host (a mark in /run), so
    the next flip starts them again, where the engine state alone would say "not serving, leave
    it". A flip that finishes, and `serve stop`, leave no mark; `--check` changes nothing."""
    inv = str(REPO / "inventory/pair-1cable.yml")
    marks = "ls /run/sparkfab/*.resume 2>/dev/null | wc -l"
    with lab(inv, "pair1"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        assert sparkfab("serve", "start", inv, "--lab", "-q").code == 0
        # --check says what the flip would do and does none of it
        env = "cat /etc/sparkfab/nccl.env /run/sparkfab/llama.pid"
        before = {h: ssh("pair1", h, env).stdout for h in ("spark-a", "spark-b")}
        preview = sparkfab("linkspeed", inv, "100e", "--lab", "--check", "-q")
        assert preview.code == 0, preview.err
        want = "would replace files on 2 host(s) (spark-a, spark-b) and restart serving on 2; nothing changed"
        assert want in preview.err, preview.err
        assert {h: ssh("pair1", h, env).stdout for h in before} == before
        assert not (lab_dir("pair1") / "state" / "link_speed").exists()
        again = sparkfab("serve", "restart", inv, "--lab", "--check", "-q")
        want = "would stop the engine on 2 host(s) (spark-a, spark-b) and start it on 2 (spark-a, spark-b); nothing"
        assert again.code == 0 and want in again.err, again.err
        assert {h: ssh("pair1", h, env).stdout for h in before} == before
        flip = sparkfab("linkspeed", inv, "100e", "--lab", "-q")
        assert flip.code == 0 and "serving restarted on 2 host(s)" in flip.err, flip.err
        assert [ssh("pair1", h, marks).stdout.strip() for h in ("spark-a", "spark-b")] == ["0", "0"]
        # what a flip interrupted between its stop and its start leaves on each host
        for host in ("spark-a", "spark-b"):
            pid = ssh("pair1", host, "cat /run/sparkfab/llama.pid").stdout.strip()
            stop = f"kill -KILL -- -{pid}; rm -f /run/sparkfab/llama.pid; touch /run/sparkfab/llama.resume"
            assert ssh("pair1", host, stop).returncode == 0
        status = sparkfab("serve", "status", inv, "--lab", "--format", "json")
        assert json.loads(status.out)["instances"]["llama"]["state"] == "stopped", status.out
        again = sparkfab("linkspeed", inv, "200", "--lab", "-q")
        assert again.code == 0 and "serving restarted on 2 host(s)" in again.err, again.err
        assert sparkfab("serve", "status", inv, "--lab").code == 0
        assert [ssh("pair1", h, marks).stdout.strip() for h in ("spark-a", "spark-b")] == ["0", "0"]
        assert sparkfab("serve", "stop", inv, "--lab", "-q").code == 0
        assert sparkfab("linkspeed", inv, "100e", "--lab", "-q").err.count("serving restarted on 0 host(s)") == 1


def _answered(cluster: str, host: str, task: str) -> bool:
    """Whether `host` has answered `task` in the cluster's newest apply (ansible-runner's events)."""
    runs = sorted((lab_dir(cluster) / "state" / "runner" / "artifacts").glob("site-*"), key=lambda d: d.stat().st_mtime)
    for f in (runs[-1] / "job_events").glob("*.json") if runs else ():
        try:
            ev = json.loads(f.read_text())
        except (OSError, ValueError):  # being written
            continue
        data = ev.get("event_data", {})
        if ev.get("event") == "runner_on_ok" and data.get("host") == host and data.get("task", "").startswith(task):
            return True
    return False


@pytest.mark.xdist_group("pair1")
def test_a_spark_that_goes_silent_mid_apply_is_dropped_within_a_minute():
    """A Spark whose network goes silent while apply runs (its connection open, its packets
    dropped): the run names it unreachable after the keepalives (5 s x 6), not after Mitogen's
    own (30 s x 10) or the kernel's TCP timeout, and the other Spark is applied."""
    inv = str(REPO / "inventory/pair-1cable.yml")
    drop = ["iptables", "-w", "-I", "INPUT", "-p", "tcp", "--dport", "22", "-j", "DROP"]
    with lab(inv, "pair1"):
        run = started("apply", inv, "--lab")
        try:
            deadline = time.monotonic() + 120
            while not _answered("pair1", "spark-b", "Fabric | Check the host") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert in_machine("pair1", "spark-b", *drop).returncode == 0  # its connection is up: now silent
            t0 = time.monotonic()
            _, err = run.communicate(timeout=300)
            took = time.monotonic() - t0
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 3 and "spark-b: unreachable" in err, err[-2000:]
        assert took < 90, f"apply held on for {took:.0f} s after spark-b went silent"
        # the lab says what it sees of the silent Spark: running, addressed, listening, and the drop
        view = err.split("the lab's view of spark-b: ", 1)[-1]
        assert view.startswith("its machine runs (init "), err[-2000:]
        assert f"{mgmt_ip('pair1', 'spark-b')} is on " in view and "sshd listens on port 22" in view, view
        assert "its firewall's input drops: ip filter INPUT: a rule that drops" in view, view
        assert "spark-a: " not in err.split("deploy failed on:")[-1], err[-2000:]
        assert in_machine("pair1", "spark-b", "iptables", "-w", "-D", *drop[3:]).returncode == 0
        again = sparkfab("apply", inv, "--lab", "-q")
        assert again.code == 0, again.err


@pytest.mark.xdist_group("pair1")
def test_tags_choose_what_an_apply_configures():
    """`apply --tags` and `--skip-tags` as an Ansible user means them: with each kind of
    configuration taken away on a Spark by hand, `--tags nccl` puts back the NCCL environment
    alone, `--skip-tags nccl,netplan` the launch files and sysctls but not the fabric's
    addresses, `--tags netplan` those; then a whole apply has nothing left to do."""
    inv = str(REPO / "inventory/pair-1cable.yml")
    nccl, launch, sysctl = "/etc/sparkfab/nccl.env", "/etc/sparkfab/launch/llama.sh", "/etc/sysctl.d/60-sparkfab.conf"
    probe = f"grep -c by-hand {nccl} {launch} {sysctl}; ip -4 -o addr show dev enp1s0f1np1 | grep -c 'inet 192.168.'"

    def left() -> list[str]:  # per file: 1 while the hand's line is there; then the addresses
        return [line.rsplit(":", 1)[-1] for line in ssh("pair1", "spark-a", probe).stdout.split()]

    with lab(inv, "pair1"):
        assert sparkfab("apply", inv, "--lab", "-q").code == 0
        damage = f"for f in {nccl} {launch} {sysctl}; do echo '# by-hand' >>$f; done; ip -4 addr flush dev enp1s0f1np1"
        assert ssh("pair1", "spark-a", damage).returncode == 0
        assert left() == ["1", "1", "1", "0"]
        assert sparkfab("apply", inv, "--lab", "-q", "--tags", "nccl").code == 0
        assert left() == ["0", "1", "1", "0"]
        assert sparkfab("apply", inv, "--lab", "-q", "--skip-tags", "nccl,netplan").code == 0
        assert left() == ["0", "0", "0", "0"]
        assert sparkfab("apply", inv, "--lab", "-q", "-t", "netplan").code == 0
        assert left() == ["0", "0", "0", "1"]
        settled = sparkfab("apply", inv, "--lab", "-q")
        assert settled.code == 0 and _changed(settled.err) == 0, settled.err
        typo = sparkfab("apply", inv, "--lab", "-q", "--tags", "ncl")
        assert typo.code == 2 and "ncl is not a tag of sparkfab's plays" in typo.err, typo.err
