"""In the lab: a site inventory split over hosts.ini, group_vars/ and host_vars/, with a host that
is not a Spark, a group of its own and an encrypted vars file, runs the whole cycle like the single
file (root): preflight, apply, verify, linkspeed, serve, reset; the site's groups select in the lab
as in the site; the host that is not a Spark, booted beside the Sparks and reachable by the lab's
ssh, is never logged into."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparkfab.paths import lab_dir
from tests.conftest import REPO
from tests.helpers.lab import in_machine, lab, requires_lab, sparkfab

pytestmark = [pytest.mark.xdist_group("splitring"), pytest.mark.lab, requires_lab]


def test_a_site_inventory_runs_the_lab_cycle(tmp_path, monkeypatch):
    d = tmp_path / "ring4-ini"
    shutil.copytree(REPO / "tests/data/split/ring4-ini", d)
    gv = d / "group_vars/all.yml"
    gv.write_text(gv.read_text().replace("cluster: ring4", "cluster: splitring\n  group: sparks"))
    hosts = d / "hosts.ini"
    hosts.write_text(
        hosts.read_text() + "\n[edge]\nspark-329f\nspark-3d38\n\n[monitoring]\nprom1 ansible_host=10.255.0.50\n"
    )
    (tmp_path / "vault-pass").write_text("lab-vault\n")
    secret = d / "group_vars/sparks.yml"
    secret.write_text("vault_site_note: kept-secret\n")
    ansible_vault = str(Path(sys.executable).with_name("ansible-vault"))
    subprocess.run(
        [ansible_vault, "encrypt", "--vault-password-file", str(tmp_path / "vault-pass"), str(secret)], check=True
    )
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(tmp_path / "vault-pass"))
    inv = str(hosts)
    with lab(inv, "splitring"):
        # prom1 is a booted machine of the lab, reachable as the lab reaches its Sparks
        reach = subprocess.run(
            ["ssh", "-F", str(lab_dir("splitring") / "ssh_config"), "prom1", "hostname"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert reach.stdout.strip() == "prom1", reach.stderr
        logins_before = _logins("splitring", "prom1")
        assert len(logins_before) == 1, logins_before  # that login shows
        # the lab wrote its own inventory with the lab's way in: the Sparks only, their groups kept
        written = yaml.safe_load((lab_dir("splitring") / "inventory.yml").read_text())["all"]
        assert written["vars"]["sparkfab"]["cluster"] == "splitring"
        assert "ansible_port" not in written["hosts"]["spark-3d38"]  # the user's port is not the lab's
        assert "prom1" not in written["hosts"] and sorted(written["children"]["edge"]["hosts"]) == [
            "spark-329f",
            "spark-3d38",
        ]
        pre = sparkfab("preflight", inv, "--lab", "--format", "json")
        assert pre.code == 0, [r for r in json.loads(pre.out)["results"] if r["status"] == "fail"]
        assert "prom1" not in {r.get("host") for r in json.loads(pre.out)["results"]}
        applied = sparkfab("apply", inv, "--lab", "-q")
        assert applied.code == 0, applied.err
        verified = sparkfab("verify", inv, "--lab", "--format", "json")
        assert verified.code == 0, [r for r in json.loads(verified.out)["results"] if r["status"] == "fail"]
        # the site's own group, as Ansible matches it, checks its two Sparks only
        edge = sparkfab("verify", inv, "--lab", "--limit", "edge", "--format", "json")
        checked = {r["host"] for r in json.loads(edge.out)["results"] if r["status"] != "skip" and r.get("host")}
        assert edge.code == 0 and checked == {"spark-329f", "spark-3d38"}, edge.err
        flip = sparkfab("linkspeed", inv, "100e", "--lab", "-q")
        assert flip.code == 0, flip.err
        assert sparkfab("serve", "start", inv, "--lab", "-q").code == 0
        status = sparkfab("serve", "status", inv, "--lab", "--format", "json")
        ranks = json.loads(status.out)["instances"]
        assert status.code == 0 and all(r["state"] == "running" for i in ranks.values() for r in i["ranks"])
        assert "prom1" not in {r["host"] for i in ranks.values() for r in i["ranks"]}
        reset = sparkfab("reset", inv, "--lab", "-q")
        assert reset.code == 0, reset.err
        # the host that is not a Spark: no login since the lab booted it, nothing of sparkfab's
        logins = _logins("splitring", "prom1")
        assert logins == logins_before, logins
        untouched = in_machine("splitring", "prom1", "sh", "-c", "ls /etc/sparkfab /etc/netplan/60-sparkfab.yaml")
        assert untouched.returncode != 0 and "No such file" in untouched.stderr


def _logins(cluster: str, host: str) -> list[str]:
    """The logins a lab machine's sshd accepted, as its journal says."""
    journal = in_machine(cluster, host, "journalctl", "--no-pager", "-o", "short-unix", "SYSLOG_IDENTIFIER=sshd")
    return [line for line in journal.stdout.splitlines() if "Accepted " in line]
