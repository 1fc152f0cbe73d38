"""`linkspeed --instance` / `--limit`: one instance at its own link speed, rendered and
checked per host; a --limit is matched the way Ansible matches it and must cover whole instances."""

from __future__ import annotations

import argparse

import pytest

from sparkfab.cluster.limits import flipped_instances
from sparkfab.cluster.target import Target
from sparkfab.errors import UsageError
from sparkfab.render.tree import render
from sparkfab.render.writer import write_tree
from sparkfab.resolve import load_plan
from tests.helpers.inventories import two_instances


def _nccl(tree, host: str) -> str:
    return next(f.content for f in tree.hosts[host] if f.path == "/etc/sparkfab/nccl.env")


def test_one_instance_renders_at_its_own_speed(tmp_path):
    plan = load_plan(two_instances(tmp_path)).with_instance_speed("a", "100e")
    assert {h.name: plan.mode_of(h.name) for h in plan.hosts} == {"s0": "100e", "s1": "100e", "s2": "200", "s3": "200"}
    tree = render(plan)
    assert "NCCL_IB_HCA==rocep1s0f1\n" in _nccl(tree, "s0")
    assert "NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1\n" in _nccl(tree, "s2")
    # back to the cluster's speed: no override left
    assert plan.with_instance_speed("a", "200").host_speeds == {}
    assert "host_speeds" not in load_plan(two_instances(tmp_path)).to_dict()


def test_the_state_of_a_flipped_instance_is_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKFAB_STATE_DIR", str(tmp_path / "state"))
    inv = two_instances(tmp_path)
    (tmp_path / "state/two").mkdir(parents=True)
    (tmp_path / "state/two/link_speed.b").write_text("100e\n")
    target = Target.load(inv)
    assert target.plan.host_speeds == {"s2": "100e", "s3": "100e"}
    assert target.state == tmp_path / "state/two" and target.lab is None


@pytest.mark.parametrize(
    ("instance", "limit", "want"),
    [
        (None, None, None),
        ("a", None, ["a"]),
        (None, "s2:s3", ["b"]),
        (None, "all[0:1]", ["a"]),
        (None, "~s[23]", ["b"]),
        (None, "all", ["a", "b"]),
        ("b", "s2,s3", ["b"]),
    ],
)
def test_a_limit_is_matched_as_ansible_matches_it(tmp_path, instance, limit, want):
    plan = load_plan(two_instances(tmp_path))
    write_tree(render(plan), tmp_path / "tree")
    assert flipped_instances(plan, tmp_path / "tree", instance, limit) == want


@pytest.mark.parametrize(
    ("instance", "limit", "message"),
    [
        (None, "s1", "--limit s1 leaves out s0 of a: its ranks share one link speed"),
        (None, "nohost", "--limit nohost matches no host of an instance"),
        ("c", None, "--instance c: two has the instance(s) a, b"),
    ],
)
def test_a_partial_flip_that_would_split_an_instance_is_refused(tmp_path, instance, limit, message):
    plan = load_plan(two_instances(tmp_path))
    write_tree(render(plan), tmp_path / "tree")
    with pytest.raises(UsageError) as exc:
        flipped_instances(plan, tmp_path / "tree", instance, limit)
    assert str(exc.value) == message


def test_linkspeed_takes_instance_and_limit():
    from sparkfab.cli import parser

    args = parser().parse_args(["linkspeed", "inv.yml", "100e", "--instance", "a", "--limit", "s0"])
    assert isinstance(args, argparse.Namespace) and (args.instance, args.limit) == ("a", "s0")


def test_a_limit_selects_what_ansible_selects_before_any_host_is_contacted(tmp_path, monkeypatch):
    """apply, serve and reset name the hosts a --limit selects (and refuse one that selects
    none); `@FILE` is a file of the working directory, as for ansible-playbook."""
    from sparkfab.cluster.limits import files_here, selected

    plan = load_plan(two_instances(tmp_path))
    write_tree(render(plan), tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "retry").write_text("s2\ns3\n")
    for limit, want in (("s0:s3", ["s0", "s3"]), ("all:!s1", ["s0", "s2", "s3"]), ("@retry", ["s2", "s3"])):
        assert sorted(selected(plan, tmp_path / "tree", files_here(limit))) == want, limit
    assert files_here("@retry,s0") == f"@{tmp_path / 'retry'},s0"
    assert selected(plan, tmp_path / "tree", None) == ["s0", "s1", "s2", "s3"]
    with pytest.raises(UsageError, match="--limit nohost selects no host of two"):
        selected(plan, tmp_path / "tree", "nohost")
