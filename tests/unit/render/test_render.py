"""Everything a host needs, rendered from the plan."""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sparkfab.assets import shipped
from sparkfab.engines import ENGINES, flag_argv, flags
from sparkfab.engines.recipes import recipes
from sparkfab.render.tree import render
from sparkfab.render.writer import write_tree
from sparkfab.resolve import load_plan
from tests.conftest import EXAMPLES, REGEN, REPO

GOLDEN = REPO / "tests/golden"
MODES = ("200", "100e")


def rendered(path: Path, mode: str, out: Path) -> dict[str, str]:
    plan = load_plan(str(path)).with_link_speed(mode) if mode else load_plan(str(path))
    write_tree(render(plan, shipped()), out)
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}


NCCL_FILES = ("nccl.env", "nccl-graph.xml")


def golden_view(files: dict[str, str], mode: str = "200") -> dict[str, str]:
    """What goldens pin: generated files (not the shipped collective.py and exporter.py, not the derived bundles);
    at 100e only the NCCL files, since every other file is the 200 one (test_100e_differs_only_in_nccl)."""
    return {
        k: v
        for k, v in files.items()
        if not k.startswith("bundles/")
        and not k.endswith(("collective.py", "exporter.py"))
        and k != ".sparkfab-output"
        and (mode != "100e" or k.endswith(NCCL_FILES))
    }


@pytest.mark.golden
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_golden(tmp_path, path, mode):
    """Regenerate with: SPARKFAB_REGEN=1 scripts/test.sh -m golden"""
    all_files = rendered(path, mode, tmp_path)
    got = golden_view(all_files, mode)
    gold = GOLDEN / path.stem / mode
    if REGEN:
        shutil.rmtree(gold, ignore_errors=True)
        for rel, text in got.items():
            (gold / rel).parent.mkdir(parents=True, exist_ok=True)
            (gold / rel).write_text(text)
    want = {str(p.relative_to(gold)): p.read_text() for p in sorted(gold.rglob("*")) if p.is_file()}
    assert sorted(got) == sorted(want), "files differ: regenerate and review the golden diff"
    for rel in got:
        if got[rel] != want[rel]:
            diff = "".join(
                difflib.unified_diff(
                    want[rel].splitlines(True), got[rel].splitlines(True), f"golden/{rel}", f"rendered/{rel}"
                )
            )
            pytest.fail(f"{path.stem}/{mode}/{rel} differs from its golden file:\n{diff}")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_netplan_generate_accepts_every_file(tmp_path, path):
    """The real `netplan generate --root-dir` (writes only below the root dir)."""
    exe = shutil.which("netplan")
    assert exe, "netplan.io is installed by scripts/setup.sh"
    rendered(path, "200", tmp_path / "tree")
    for host_dir in sorted(p for p in (tmp_path / "tree").iterdir() if (p / "etc/netplan").is_dir()):
        root = tmp_path / "root" / host_dir.name
        shutil.copytree(host_dir / "etc/netplan", root / "etc/netplan")
        res = subprocess.run([exe, "generate", "--root-dir", str(root)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        networks = sorted((root / "run/systemd/network").glob("*.network"))
        text = "".join(n.read_text() for n in networks)
        assert "MTUBytes=9000" in text or "MTUBytes=9000" in "".join(
            n.read_text() for n in (root / "run/systemd/network").glob("*.link")
        )
        plan = load_plan(str(path))
        for iface in plan.host(host_dir.name).ifaces:
            assert f"Address={iface.address}" in text


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_100e_differs_only_in_nccl(tmp_path, path):
    a = rendered(path, "200", tmp_path / "a")
    b = rendered(path, "100e", tmp_path / "b")
    assert sorted(a) == sorted(b)
    changed = {rel for rel in a if a[rel] != b[rel]} - {".sparkfab-output"}  # the manifest holds the files' sums
    for rel in sorted(r for r in changed if r.startswith("bundles/")):
        ja, jb = json.loads(a[rel])["files"], json.loads(b[rel])["files"]
        assert {p for p in ja if ja[p] != jb[p]} == {p for p in ja if ja[p]["kind"] == "nccl"}
        changed.discard(rel)
    assert changed and all(rel.endswith(NCCL_FILES) for rel in changed), changed
    for rel in (r for r in changed if r.endswith("nccl.env")):
        hca = next(line for line in b[rel].splitlines() if line.startswith("NCCL_IB_HCA="))
        assert "roceP2" not in hca and "rocep1" in hca


def test_bundle_carries_every_file_with_its_kind(tmp_path):
    files = rendered(REPO / "inventory/ring4.yml", "200", tmp_path)
    for host in ("spark-329f", "spark-3d38"):
        bundle = json.loads(files[f"bundles/{host}.json"])["files"]
        mine = {"/" + k.split("/", 1)[1]: v for k, v in files.items() if k.startswith(host + "/")}
        assert set(bundle) == set(mine)
        netplan = {p for p in mine if p.startswith("/etc/netplan/")}
        assert {p for p in bundle if bundle[p]["kind"] == "netplan"} == netplan
        assert all(bundle[p]["content"] == mine[p] for p in bundle)
        assert (
            bundle["/etc/sparkfab/collective.py"]["content"]
            == (REPO / "fabric/sparkfab/assets/collective.py").read_text()
        )


def test_second_render_is_byte_identical(tmp_path):
    for path in EXAMPLES:
        assert rendered(path, "200", tmp_path / f"{path.stem}1") == rendered(path, "200", tmp_path / f"{path.stem}2")


def _ring6(tmp_path: Path) -> Path:
    hosts = {f"r{i}": {"ansible_host": f"10.0.0.{i + 1}"} for i in range(6)}
    orient = [("p0", "p1"), ("p0", "p0"), ("p1", "p1"), ("p0", "p1"), ("p0", "p0"), ("p1", "p1")]
    cables = [[f"r{i}:{orient[i][0]}", f"r{(i + 1) % 6}:{orient[i][1]}"] for i in range(6)]
    inv = {
        "all": {
            "hosts": hosts,
            "vars": {
                "sparkfab": {
                    "cluster": "ring6",
                    "control_plane": "fabric",
                    "subnet_pool": "192.168.96.0/20",
                    "cables": cables,
                    # a model of its own: GLM-5.3-Flash's 20 heads do not divide by 6 (the routes are the point)
                    "instances": {
                        "x": {
                            "hosts": list(hosts),
                            "tp": 6,
                            "launcher": "glm-5.3-flash-ring4",
                            "model": "example-org/six-way-model",
                        }
                    },
                }
            },
        }
    }
    f = tmp_path / "ring6.yml"
    f.write_text(yaml.safe_dump(inv))
    return f


def _kernel_tables(tree: Path, host: str) -> tuple[dict[str, str], list[tuple[ipaddress.IPv4Network, str, str]]]:
    """Addresses and routes of one host, read back from its rendered netplan only."""
    doc = yaml.safe_load((tree / host / "etc/netplan/60-sparkfab.yaml").read_text())
    addrs, routes = {}, []
    for dev, eth in doc["network"]["ethernets"].items():
        for a in eth["addresses"]:
            iface = ipaddress.IPv4Interface(a)
            addrs[str(iface.ip)] = dev
            routes.append((iface.network, dev, ""))
        for r in eth.get("routes", []):
            routes.append((ipaddress.IPv4Network(r["to"]), dev, r["via"]))
    return addrs, routes


def _lookup(routes, dst):
    """Longest-prefix match, as the kernel picks a route."""
    matches = [r for r in routes if ipaddress.IPv4Address(dst) in r[0]]
    return max(matches, key=lambda r: r[0].prefixlen) if matches else None


def test_ring6_fabric_control_plane_reaches_everyone(tmp_path):
    tree = tmp_path / "tree"
    plan = load_plan(str(_ring6(tmp_path)))
    write_tree(render(plan, shipped()), tree)
    hosts = [h.name for h in plan.hosts]
    tables = {h: _kernel_tables(tree, h) for h in hosts}
    owner = {ip: h for h in hosts for ip in tables[h][0]}
    control = {h: plan.host(h).control_address for h in hosts}
    sysctl = {h: (tree / h / "etc/sysctl.d/60-sparkfab.conf").read_text() for h in hosts}
    for src in hosts:
        for dst in hosts:
            if src == dst:
                continue
            here, came_from, path = src, None, [src]
            while control[dst] not in tables[here][0]:
                route = _lookup(tables[here][1], control[dst])
                assert route, f"{here} has no route to {dst}'s control address {control[dst]}"
                nxt = owner[route[2]] if route[2] else owner[control[dst]]
                assert nxt != came_from, f"{here} sends {src}->{dst} back the way it came"
                if here != src:
                    assert "net.ipv4.ip_forward = 1" in sysctl[here], f"{here} forwards but has no ip_forward"
                came_from, here = here, nxt
                path.append(here)
                assert len(path) <= 4, path
            assert here == dst
    for h in hosts:
        assert all(f"net.ipv4.conf.{i}.rp_filter = 2" in sysctl[h] for i in plan.host(h).fabric_ifs)


def test_generated_vllm_flags_are_known():
    known = flags.names(ENGINES["vllm"])
    for path in EXAMPLES:
        plan = load_plan(str(path))
        tree = render(plan, {})
        for host, files in tree.hosts.items():
            for f in files:
                if f.path.endswith(".json") and "/launch/" in f.path:
                    import json

                    meta = json.loads(f.content)
                    if meta["engine"] != "vllm":
                        continue  # another engine's flags: its own table (tests/slow/test_launch_sglang.py)
                    argv = meta["argv"]
                    if argv[0] == "bash" and "&& exec vllm serve " not in argv[-1]:
                        assert "exec ray start --block" in argv[-1]  # a Ray worker: no vllm serve of its own
                        continue
                    serve = shlex.split(argv[-1].split("&& exec ", 1)[1]) if argv[0] == "bash" else argv
                    assert serve[:2] == ["vllm", "serve"]
                    given = [a for a in serve if a.startswith("--")]
                    unknown = [a for a in given if a not in known and "vllm" in serve]
                    assert not unknown, (path.name, host, unknown)


@pytest.mark.slow  # starts vLLM's own parser in .venv-vllm
def test_flag_list_is_generated_from_vllms_parser():
    """The list validate checks flags against is vLLM's own (run where a vLLM environment is:
    SPARKFAB_VLLM_PYTHON, or .venv-vllm beside the project)."""
    py = Path(os.environ.get("SPARKFAB_VLLM_PYTHON") or REPO / ".venv-vllm/bin/python")
    if not py.exists():
        pytest.skip("no vLLM environment to compare with (SPARKFAB_VLLM_PYTHON)")
    table = REPO / "launchers/vllm-serve-flags.txt"
    res = subprocess.run(
        [str(py), str(REPO / "fabric/sparkfab/assets/vllm_oracle.py"), "flags", "--out", str(table), "--check"],
        capture_output=True,
        text=True,
        env={**os.environ, "VLLM_TARGET_DEVICE": "cpu"},
        timeout=600,
    )
    assert res.returncode == 0, (
        f"stale: run fabric/sparkfab/assets/vllm_oracle.py flags with vLLM's Python\n{res.stderr[-800:]}"
    )


def test_flag_lists_name_their_engine_version():
    vllm, sglang = ENGINES["vllm"], ENGINES["sglang"]
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", flags.version(vllm))
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", flags.version(sglang))
    assert "--tensor-parallel-size" in flags.names(vllm) and "--no-enable-prefix-caching" in flags.names(vllm)
    assert {"--tp-size", "--dist-init-addr", "--node-rank", "--nnodes"} <= flags.names(sglang)


def test_recipe_flags_are_known():
    for name, rec in recipes().items():
        known = flags.names(rec.engine_spec)
        if rec.engine_spec.flags_file:
            bad = [a for a in flag_argv(rec.flags) if a.startswith("--") and a not in known]
            assert not bad, (name, bad)


def test_engine_flag_hash_identical_across_ranks():
    plan = load_plan(str(REPO / "inventory/switch8-crs804-200.yml"))
    from sparkfab.engines.recipes import recipe
    from sparkfab.render.launch import launch

    inst = plan.instances[0]
    hashes = {launch(plan, inst, plan.host(h), recipe(inst.launcher)).engine_hash for h in inst.hosts}
    assert len(hashes) == 1
    changed = dataclasses.replace(inst, flags={"max-num-seqs": 9})
    assert launch(plan, changed, plan.host(inst.hosts[0]), recipe(inst.launcher)).engine_hash not in hashes


def test_start_order_workers_first():
    plan = load_plan(str(REPO / "inventory/ring4.yml"))
    from sparkfab.engines.recipes import recipe
    from sparkfab.render.launch import launch

    inst = plan.instances[0]
    waves = {h: launch(plan, inst, plan.host(h), recipe(inst.launcher)).start_order for h in inst.hosts}
    assert waves == {h: 1 if h == inst.ranks[0].host else 0 for h in inst.hosts}  # every worker, then rank 0


def test_old_nccl_warns(tmp_path, cli):
    text = (
        (REPO / "inventory/ring4.yml")
        .read_text()
        .replace("control_plane: fabric", "control_plane: fabric\n      nccl_version: 2.28.3")
    )
    f = tmp_path / "old.yml"
    f.write_text(text)
    res = cli("render", str(f), "-o", str(tmp_path / "out"))
    assert res.code == 0
    assert "warning: NCCL 2.28.3 predates 2.30.7" in res.err
    assert "# WARNING: NCCL 2.28.3" in (tmp_path / "out/spark-329f/etc/sparkfab/nccl.env").read_text()


def test_graph_xml_schema(tmp_path, cli):
    res = cli("render", "inventory/ring4.yml", "-o", str(tmp_path), "--nccl-graph")
    assert res.code == 0
    import xml.etree.ElementTree as ET

    root = ET.parse(tmp_path / "spark-329f/etc/sparkfab/nccl-graph.xml").getroot()
    graph = root.find("graph")
    assert root.get("version") == "1" and graph.get("pattern") == "4" and graph.get("crossnic") == "1"
    chans = graph.findall("channel")
    assert len(chans) == int(graph.get("nchannels")) == 8
    # rank 0 (spark-329f): prev port p0, next port p1; devices in PCI order rocep1s0f0=0 ... roceP2p1s0f1=3
    assert [[n.get("dev") for n in c.findall("net")] for c in chans[:2]] == [["0", "1"], ["2", "3"]]
    assert all(c.find("gpu").get("dev") == "0" for c in chans)
    env = (tmp_path / "spark-329f/etc/sparkfab/nccl.env").read_text()
    assert "NCCL_GRAPH_FILE=/etc/sparkfab/nccl-graph.xml" in env and "NCCL_IB_SUBNET_AWARE_ROUTING=1" in env
