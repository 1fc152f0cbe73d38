"""Every path sparkfab keeps files at (`paths`): a cluster's state and a lab's directory, moved by
their environment variables, and the content beside the package found by SPARKFAB_HOME first."""

from __future__ import annotations

from sparkfab import paths
from tests.conftest import REPO


def test_a_clusters_state_and_a_labs_directory_follow_their_variables(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.STATE_ENV, str(tmp_path / "state"))
    monkeypatch.setenv(paths.LAB_ENV, str(tmp_path / "labs"))
    assert paths.state_dir("ring4") == tmp_path / "state/ring4"
    lab = paths.lab_paths("ring4")
    assert lab.dir == paths.lab_dir("ring4") == tmp_path / "labs/ring4"
    assert paths.lab_state("ring4") == lab.state_file == lab.dir / "state.json"
    assert paths.lab_inventory_file("ring4") == lab.inventory == lab.dir / "inventory.yml"
    # what a lab holds, each in one place and none in another's
    held = [lab.state_file, lab.inventory, lab.cluster_state, lab.machines, lab.keys, lab.known_hosts,
            lab.ssh_config, lab.logs, lab.bin, lab.model]  # fmt: skip
    assert len(set(held)) == len(held) and all(p.is_relative_to(lab.dir) for p in held)


def test_the_content_beside_the_package_is_the_checkouts_unless_sparkfab_home_says(monkeypatch, tmp_path):
    monkeypatch.delenv("SPARKFAB_HOME", raising=False)
    assert paths.repo_dir("launchers") == REPO / "launchers"
    monkeypatch.setenv("SPARKFAB_HOME", str(tmp_path))
    assert paths.repo_dir("launchers") == tmp_path / "launchers"
