"""In the lab: a site inventory split over hosts.ini, group_vars/ and host_vars/, with a host that
is not a Spark, a group of its own and an encrypted vars file, brings up, applies and verifies
like the single file (root); the site's groups select in the lab as in the site."""

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
from tests.helpers.lab import lab, requires_lab, sparkfab

pytestmark = [pytest.mark.lab, requires_lab]


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
        # the lab wrote its own inventory with the lab's way in: the Sparks only, their groups kept
        written = yaml.safe_load((lab_dir("splitring") / "inventory.yml").read_text())["all"]
        assert written["vars"]["sparkfab"]["cluster"] == "splitring"
        assert "ansible_port" not in written["hosts"]["spark-3d38"]  # the user's port is not the lab's
        assert "prom1" not in written["hosts"] and sorted(written["children"]["edge"]["hosts"]) == [
            "spark-329f",
            "spark-3d38",
        ]
        applied = sparkfab("apply", inv, "--lab", "-q")
        assert applied.code == 0, applied.err
        verified = sparkfab("verify", inv, "--lab", "--format", "json")
        assert verified.code == 0, [r for r in json.loads(verified.out)["results"] if r["status"] == "fail"]
        # the site's own group, as Ansible matches it, checks its two Sparks only
        edge = sparkfab("verify", inv, "--lab", "--limit", "edge", "--format", "json")
        checked = {r["host"] for r in json.loads(edge.out)["results"] if r["status"] != "skip" and r.get("host")}
        assert edge.code == 0 and checked == {"spark-329f", "spark-3d38"}, edge.err
