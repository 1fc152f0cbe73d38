"""The lab's one record and the one answer to "is it up": the state `lab up` writes last, and the
namespaces a reboot of this machine would take away."""

from __future__ import annotations

from sparkfab import paths
from sparkfab.lab import links, state
from sparkfab.lab.spec import ns_prefix


def test_a_lab_is_up_with_its_state_and_its_namespaces(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path / "labs"))
    netns = tmp_path / "netns"
    netns.mkdir()
    monkeypatch.setattr(links, "NETNS_DIR", netns)
    assert not state.is_up("pair1")  # nothing at all
    (netns / f"{ns_prefix('pair1')}s0").touch()
    assert not state.is_up("pair1")  # what a failed `lab up` left: namespaces, no state
    (tmp_path / "labs/pair1").mkdir(parents=True)
    paths.lab_state("pair1").write_text("{}")
    assert state.is_up("pair1")
    assert not state.is_up("pair")  # another cluster's prefix is not this one's
    (netns / f"{ns_prefix('pair1')}s0").unlink()
    assert not state.is_up("pair1")  # this machine rebooted: the state is left, the lab is not up


def test_a_lab_that_is_not_up_is_said_so_by_the_verbs(tmp_path, monkeypatch, cli):
    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path / "labs"))
    res = cli("lab", "wire", "inventory/pair-1cable.yml", "--cut", "spark-a:p1")
    assert res.code == 2 and "lab pair1 is not up" in res.err
