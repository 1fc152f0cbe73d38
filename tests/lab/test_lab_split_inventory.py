"""In the lab: an inventory split over hosts.ini, group_vars/ and host_vars/ brings up,
applies and verifies like the single file (root)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from sparkfab.paths import lab_dir
from tests.conftest import REPO
from tests.helpers.lab import lab, requires_lab, sparkfab

pytestmark = [pytest.mark.lab, requires_lab]


def test_a_split_inventory_runs_the_lab_cycle(tmp_path):
    d = tmp_path / "ring4-ini"
    shutil.copytree(REPO / "tests/data/split/ring4-ini", d)
    gv = d / "group_vars/all.yml"
    gv.write_text(gv.read_text().replace("cluster: ring4", "cluster: splitring"))
    inv = str(d / "hosts.ini")
    with lab(inv, "splitring"):
        # the lab wrote its own inventory in the plain shape, with the lab's way in
        written = yaml.safe_load((lab_dir("splitring") / "inventory.yml").read_text())["all"]
        assert written["vars"]["sparkfab"]["cluster"] == "splitring"
        assert "ansible_port" not in written["hosts"]["spark-3d38"]  # the user's port is not the lab's
        applied = sparkfab("apply", inv, "--lab", "-q")
        assert applied.code == 0, applied.err
        verified = sparkfab("verify", inv, "--lab", "--format", "json")
        assert verified.code == 0, [r for r in json.loads(verified.out)["results"] if r["status"] == "fail"]
