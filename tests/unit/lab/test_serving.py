"""Without root: what the lab's vLLM engine renders, where its Gloo traffic goes, how the
lab shapes 200 and 100e, and how bench and report read a lab run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sparkfab.engines.recipes import recipes
from sparkfab.errors import InventoryError, RenderError
from sparkfab.render.launch import gloo_endpoints, launch
from sparkfab.resolve import load_plan
from tests.conftest import REPO


def _with(path: str, tmp: Path, launcher: str = "lab-vllm", **sparkfab: object) -> str:
    data = yaml.safe_load((REPO / path).read_text())
    sf = data["all"]["vars"]["sparkfab"]
    sf.update(sparkfab)
    for inst in sf["instances"].values():
        inst["launcher"] = launcher
    out = tmp / Path(path).name
    out.write_text(yaml.safe_dump(data))
    return str(out)


def _launches(inv: str) -> dict[str, tuple[list[str], dict[str, str]]]:
    plan = load_plan(inv)
    rec = recipes()["lab-vllm"]
    out = {}
    for inst in plan.instances:
        for h in inst.hosts:
            lx = launch(plan, inst, plan.host(h), rec)
            out[h] = (list(lx.argv), dict(lx.env))
    return out


def test_pair_sends_its_allreduces_over_the_cables_root0_twin(tmp_path):
    got = _launches(_with("inventory/pair-1cable.yml", tmp_path))
    assert {h: env["GLOO_SOCKET_IFNAME"] for h, (_, env) in got.items()} == {
        "spark-a": "enp1s0f1np1",
        "spark-b": "enp1s0f1np1",
    }
    assert {h: env["VLLM_HOST_IP"] for h, (_, env) in got.items()} == {
        "spark-a": "192.168.100.1",
        "spark-b": "192.168.100.2",
    }
    for argv, env in got.values():
        assert argv[argv.index("--master-addr") + 1] == env["MASTER_ADDR"] == "192.168.100.1"
        assert argv[:3] == ["vllm", "serve", "/var/lib/sparkfab/lab-model"]


def test_ring_with_a_fabric_control_plane_uses_the_control_addresses(tmp_path):
    inv = _with("inventory/ring4.yml", tmp_path)
    plan = load_plan(inv)
    got = _launches(inv)
    for h in plan.hosts:
        argv, env = got[h.name]
        assert env["GLOO_SOCKET_IFNAME"] == h.control_if and env["VLLM_HOST_IP"] == h.control_address
        assert argv[argv.index("--master-addr") + 1] == plan.instances[0].master_addr


def test_switch_uses_one_rail_every_rank_is_on_and_keeps_it_at_100e(tmp_path):
    inv = _with("inventory/switch8-crs804-200.yml", tmp_path)
    plan = load_plan(inv)
    inst = plan.instances[0]
    ends = gloo_endpoints(plan, inst)
    rail = next(r for r in plan.rails if set(dict(r.members)) >= set(inst.hosts) and r.root == 0)
    assert {h: e.netdev for h, e in ends.items()} == {h: dict(rail.members)[h] for h in inst.hosts}
    for h in inst.hosts:  # the emulated 100 Gb/s mode keeps root 0: the Gloo netdev stays in it
        rdma = plan.host(h).iface(ends[h].netdev).rdma
        assert rdma in plan.host(h).hca["100e"]


def test_gloo_on_a_switchless_triangle_needs_a_fabric_control_plane(tmp_path):
    with pytest.raises(InventoryError, match="a switchless triangle of 3 Sparks has no subnet they all share"):
        load_plan(_with("inventory/triangle.yml", tmp_path))
    assert load_plan(_with("inventory/triangle.yml", tmp_path, control_plane="fabric")).instances


def test_endpoints_refuse_a_plan_without_a_shared_rail(tmp_path):
    from dataclasses import replace

    plan = load_plan(_with("inventory/triangle.yml", tmp_path, launcher="lab-collective"))
    with pytest.raises(RenderError, match="no rail reaches all 3 ranks"):
        gloo_endpoints(plan, plan.instances[0])
    assert gloo_endpoints(replace(plan, control_plane="fabric"), plan.instances[0])


def test_lab_inventory_swaps_in_the_lab_engine(tmp_path):
    from sparkfab.inventory import load_roundtrip
    from sparkfab.lab.inventory import lab_yaml
    from sparkfab.lab.serving import of
    from sparkfab.lab.spec import spec

    raw = load_roundtrip("inventory/ring4.yml")
    sp = spec(load_plan("inventory/ring4.yml"))
    vllm = yaml.safe_load(lab_yaml(raw, sp, of("vllm"), python="/py"))["all"]["vars"]["sparkfab"]["instances"]["glm"]
    assert vllm["launcher"] == "lab-vllm" and vllm["runtime"] == "docker"  # as on a Spark
    assert "model" not in vllm and "flags" not in vllm  # the lab recipe's model, bound into every Spark
    assert vllm["env"]["PATH"].startswith(f"{sp.paths.bin}:") and vllm["env"]["SPARKFAB_PYTHON"] == "/py"
    coll = yaml.safe_load(lab_yaml(raw, sp, of("collective"), python="/py"))["all"]["vars"]["sparkfab"]
    assert coll["instances"]["glm"]["launcher"] == "lab-collective" and "PATH" not in coll["instances"]["glm"]["env"]
    assert coll["instances"]["glm"]["runtime"] == "process"


def test_lab_rates_are_the_link_speeds_scaled_down():
    from sparkfab.lab.rates import SCALE, rate_gbps, rate_mbit, rate_text

    assert rate_text("200") == "400 Mbit/s (200 Gb/s at 1:500)"
    assert rate_text("100e") == "200 Mbit/s (emulated 100 Gb/s at 1:500)"
    assert rate_mbit("200") / rate_mbit("100e") == 2 and rate_gbps("200") * SCALE == 200
    assert rate_text("200", 1000) == "200 Mbit/s (200 Gb/s at 1:1000)" and rate_gbps("100e", 1000) == 0.1


@pytest.mark.parametrize(
    ("inventory", "scale"),
    [("pair-1cable.yml", 500), ("ring4.yml", 500), ("switch8-crs804-200.yml", 1000)],
)
def test_a_labs_scale_grows_with_its_largest_instance(inventory, scale):
    """Up to four ranks 1:500; eight ranks compute twice as long per token on the same cores, and
    their cables run at half the rate, so the network stays a share of TTFT (`lab.rates`)."""
    from sparkfab.lab import rates
    from sparkfab.lab.spec import spec

    plan = load_plan(str(REPO / "inventory" / inventory))
    assert rates.scale_for(plan) == scale
    assert spec(plan).scale == scale


def test_estimate_of_a_lab_takes_the_rates_its_cables_were_shaped_to(cli, tmp_path, monkeypatch):
    """Without a lab up, `estimate --lab` takes the rates `lab up` would shape (switch8: 1:1000);
    with one up, the scale its state recorded, which a lab brought up before a change of
    `scale_for` keeps until it is brought up again."""
    from dataclasses import replace

    from sparkfab.lab.spec import spec
    from sparkfab.lab.state import LabState

    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path))
    inv = str(REPO / "inventory/switch8-crs804-200.yml")
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 1024,
                "num_hidden_layers": 2,
                "num_attention_heads": 16,
                "vocab_size": 4096,
            }
        )
    )

    def rates() -> tuple[float, float]:
        res = cli("estimate", "--lab", "--inventory", inv, "--config", str(cfg), "--format", "json")
        assert res.code == 0, res.err
        out = json.loads(res.out)
        return out["from_gbps"], out["to_gbps"]

    assert rates() == (0.2, 0.1)
    plan = load_plan(inv)
    sp = replace(spec(plan), scale=500)
    sp.dir.mkdir(parents=True)
    LabState(cluster=plan.cluster, inventory=inv, engine="vllm", spec=sp).write()
    assert rates() == (0.4, 0.2)


def test_lab_engine_says_how_to_get_vllm(monkeypatch, tmp_path):
    from sparkfab.errors import LabError
    from sparkfab.lab.serving import of

    monkeypatch.setenv("SPARKFAB_VLLM_PYTHON", str(tmp_path / "nothing/bin/python"))
    with pytest.raises(LabError, match=r"run scripts/setup.sh .* or use `lab up --engine collective`"):
        of("vllm").check_installed()
    of("collective").check_installed()
    with pytest.raises(LabError, match=r"unknown lab engine 'sglang': vllm or collective"):
        of("sglang")


def test_lab_exec_and_up_parse_their_arguments(cli):
    res = cli("lab", "exec", "inventory/pair-1cable.yml", "spark-x", "--", "true")
    assert res.code == 2 and "no Spark 'spark-x' in pair1 (Sparks: spark-a, spark-b)" in res.err
    res = cli("lab", "exec", "inventory/pair-1cable.yml")
    assert res.code == 2 and "lab exec needs a host and a command" in res.err
    res = cli("lab", "status", "inventory/pair-1cable.yml", "extra")
    assert res.code == 2 and "unrecognized arguments: extra" in res.err
    res = cli("lab", "wire", "inventory/pair-1cable.yml")
    assert res.code == 2 and "one of the arguments --swap --cut --rate --docker is required" in res.err
    res = cli("lab", "up", "inventory/pair-1cable.yml", "--engine", "tgi")
    assert res.code == 2 and "invalid choice: 'tgi'" in res.err


def test_lab_plan_is_built_in():
    from sparkfab.measure.plans import LAB_PLAN
    from sparkfab.measure.plans import select as bench_plan

    assert [t.name for t in bench_plan("lab")] == ["L1", "L2", "L3", "L4"] == [t.name for t in LAB_PLAN]
    assert [t.name for t in bench_plan("P1,L4")] == ["P1", "L4"]
    with pytest.raises(Exception, match=r"the plans are P1-P6 and `lab` \(L1-L4\)"):
        bench_plan("L9")


def test_round_prefill_counts_concurrent_requests_once():
    from sparkfab.measure.bench.records import prefill_per_token

    rows = [
        {"round": 0, "index": i, "prompt_tokens_planned": 4096, "prefill_bytes": b, "round_prefill_bytes": 8192e4}
        for i, b in enumerate((8192e4, 4096e4))  # the first window also holds the second's prefill
    ]
    assert prefill_per_token(rows) == [1e4]
    old = [{k: v for k, v in r.items() if k != "round_prefill_bytes"} for r in rows]
    assert prefill_per_token(old) == [2e4, 1e4]


def _run(tmp: Path, label: str, inventory: dict | None, engine: dict | None = None, link: dict | None = None) -> dict:
    d = tmp / label
    d.mkdir()
    meta = {"label": label, "model": "m", "engine": engine or {}}
    if inventory is not None:
        meta["inventory"] = inventory
    if link is not None:
        meta["link"] = link
    (d / "run.json").write_text(json.dumps(meta))
    (d / "requests.jsonl").write_text("")
    from sparkfab.measure.bench.runs import load_run

    return load_run(d)


def test_report_reads_the_lab_rate_tp_and_model_from_the_run(tmp_path):
    from sparkfab.measure.bench.runs import link_gbps, served_config, served_tp

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    lab = _run(tmp_path, "200", {"link_gbps": 0.4, "tp": 2, "lab": True}, {"model_root": str(model)})
    # the server's word about a path is not followed here (bench keeps the serving host's copy)
    assert link_gbps(lab, 0) == 0.4 and served_tp(lab) == 2 and served_config(lab) is None
    plain = _run(tmp_path, "100e", None)  # a label is a name: the report's default holds
    assert (
        (link_gbps(plain, 0), link_gbps(plain, 1)) == (200.0, 100.0)
        and served_tp(plain) is None
        and served_config(plain) is None
    )
    told = _run(tmp_path, "slow", None, link={"link_speed": "100e", "link_gbps": 109.0})  # bench --link-speed 100e
    assert link_gbps(told, 1) == 109.0
    odd = _run(tmp_path, "x", {"link_gbps": True, "tp": "4"})
    assert link_gbps(odd, 1) == 100.0 and served_tp(odd) is None


def test_gloo_overhead_model_fits_the_lab_measurements():
    """The lab engine's all-reduces: the ring payload plus a fixed cost per ring step (measured)."""
    from sparkfab.measure.estimate import ring_factor
    from sparkfab.measure.estimate.gloo import gloo_bytes_per_allreduce

    data = json.loads((REPO / "tests/data/captured/gloo-bytes-lab.json").read_text())
    for key, n in (("tp2", 2), ("tp4", 4)):
        for size, sent in data[key]:
            assert abs(gloo_bytes_per_allreduce(size, n) / sent - 1) < 0.025, (n, size, sent)
            assert sent > size * ring_factor(n)  # never less than the ring's payload
    assert gloo_bytes_per_allreduce(2048, 1) == 0.0


def test_a_lab_decode_pass_is_its_all_reduces_and_the_scores_all_gather():
    """The lab model at TP8 (hidden 1024, 2 layers, 400 tokens padded to 448): per output token
    5 all-reduces of 2 kB and the all-gather of 896 B of scores, each ring step with Gloo's fixed
    part; two requests decoding together share each pass's fixed parts."""
    from dataclasses import replace

    from sparkfab.measure.estimate import Setup
    from sparkfab.measure.estimate.gloo import GLOO_PAYLOAD_OVERHEAD, GLOO_STEP_BYTES, gloo_view
    from sparkfab.measure.estimate.model import ModelSpec

    s = Setup(ModelSpec("lab", hidden=1024, layers=2, vocab=400, heads=16), 8)
    headers = 1 + GLOO_PAYLOAD_OVERHEAD
    reduce1 = 2048 * 1.75 * headers + 14 * GLOO_STEP_BYTES
    gather1 = 896 * 7 / 8 * headers + 7 * GLOO_STEP_BYTES
    assert gloo_view(s).decode_bytes_per_token == pytest.approx(5 * reduce1 + gather1)
    assert gloo_view(s).decode_bytes_per_token_formula == pytest.approx(5 * 2048 * 1.75 + 896 * 7 / 8)
    reduce2 = 4096 * 1.75 * headers + 14 * GLOO_STEP_BYTES
    gather2 = 1792 * 7 / 8 * headers + 7 * GLOO_STEP_BYTES
    assert gloo_view(replace(s, batch=2)).decode_bytes_per_token == pytest.approx((5 * reduce2 + gather2) / 2)


def test_lab_status_reads_the_state_and_names_where_each_instance_answers(cli, tmp_path, monkeypatch):
    """A lab whose namespaces are gone is down (exit 4), and the status still says what its state
    recorded: the Sparks' namespaces and addresses and the URL of each instance's rank 0."""
    from sparkfab.lab.spec import spec
    from sparkfab.lab.state import LabState

    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path))
    inv = tmp_path / "inv.yml"  # a cluster name of its own: no lab of this machine has its namespaces
    inv.write_text(Path("inventory/pair-1cable.yml").read_text().replace("cluster: pair1", "cluster: unit-down"))
    sp = spec(load_plan(str(inv)))
    sp.dir.mkdir()
    LabState(
        cluster="unit-down", inventory=str(inv), engine="collective", spec=sp, pids={"spark-a.machine": 2**22 + 1}
    ).write()
    a, b = sp.sparks
    hosts = {a.name: {"ns": a.ns, "mgmt_ip": a.mgmt_ip}, b.name: {"ns": b.ns, "mgmt_ip": b.mgmt_ip}}
    res = cli("lab", "status", str(inv), "--format", "json")
    st = json.loads(res.out)
    assert res.code == 4 and st["up"] is False and st["cluster"] == "unit-down" and st["namespaces"] == []
    assert st["processes"] == {"spark-a.machine": False} and st["hosts"] == hosts and st["engine"] == "collective"
    url = f"http://{a.mgmt_ip}:8000"
    assert st["serving"] == {"llama": {"url": url, "model": None, "engine": "collective", "tp": 2, "head": "spark-a"}}
    text = cli("lab", "status", str(inv))
    assert text.code == 4 and text.out.splitlines() == [
        "lab unit-down: down",
        "  spark-a.machine: gone",
        f"  spark-a: {a.ns} {a.mgmt_ip}",
        f"  spark-b: {b.ns} {b.mgmt_ip}",
        f"  instance llama (TP2, collective): {url} model None",
    ]


def test_an_instance_planned_on_ray_is_served_with_the_lab_builds_own_backend(tmp_path):
    """vLLM's CPU build refuses Ray: the paper's TP8 recipe (Ray) is served in the lab with vLLM's
    own backend, unless `lab up --keep-ray` asks for Ray (to rehearse its start order); an
    instance planned on vLLM's own keeps it, and the collective, which has no backend, gets none."""
    from sparkfab.inventory import load_roundtrip
    from sparkfab.lab.inventory import lab_yaml
    from sparkfab.lab.serving import of
    from sparkfab.lab.spec import spec

    inv = "inventory/switch8-crs804-200.yml"
    plan = load_plan(inv)
    planned = {i.name: i.backend for i in plan.instances}
    assert planned == {"glm": "ray"}
    sp = spec(plan)

    def backend(engine: str, keep: bool, backends: dict[str, str | None]) -> str | None:
        text = lab_yaml(load_roundtrip(inv), sp, of(engine), python="/py", backends=backends, keep_ray=keep)
        return yaml.safe_load(text)["all"]["vars"]["sparkfab"]["instances"]["glm"].get("backend")

    assert backend("vllm", False, planned) == "mp"
    assert backend("vllm", True, planned) == "ray"
    assert backend("vllm", False, {"glm": "mp"}) == backend("vllm", True, {"glm": "mp"}) == "mp"
    assert backend("collective", False, planned) is None


def test_the_labs_one_record_keeps_its_cables_as_the_drills_left_them(tmp_path, monkeypatch):
    """state.json holds the wiring too: none written means the cables as planned; what a drill
    saves (a cut, a rate) is read back by the next drill and by a rebooting Spark, and the rest
    of the record stays as `lab up` wrote it."""
    from dataclasses import replace as replaced

    from sparkfab.lab import wire
    from sparkfab.lab.spec import spec
    from sparkfab.lab.state import LabState

    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path))
    inv = tmp_path / "inv.yml"
    inv.write_text(Path("inventory/pair-1cable.yml").read_text().replace("cluster: pair1", "cluster: unit-wiring"))
    sp = spec(load_plan(str(inv)))
    sp.dir.mkdir()
    LabState(
        cluster="unit-wiring", inventory=str(inv), engine="collective", spec=sp, pids={"spark-a.machine": 7}
    ).write()
    assert wire.current(sp) == list(sp.veths)
    changed = [replaced(v, rate_mbit=123) if i == 0 else v for i, v in enumerate(sp.veths)]
    wire._save(sp, changed)
    again = LabState.read(sp.dir)
    assert wire.current(sp) == changed and again.cables() == changed
    assert (again.pids, again.engine, again.spec) == ({"spark-a.machine": 7}, "collective", sp)
    assert not (sp.dir / "wiring.json").exists()
