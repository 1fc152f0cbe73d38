"""The shared hostile-input harness's cases, each under the harness's own id, as tests of their own:
its section V (the 40 `NEW_*` cases: ansible.cfg and `ANSIBLE_*`, vaults, `--limit`, bench's
metadata and label, report inputs, site inventories, the exporter block, init, completion) and
every other case its review of 2026-12-04 (`../shared/reviews/badinput-2026-12-04.md`) found not
clean. The harness itself (`../shared/reference/hostile-2026-12-04/harness.py`) runs the CLI as a
user would; here each case runs as the rest of the table does (`runner.py`: the verb in-process,
its exit code, a message naming the culprit, nothing changed outside its outputs), and a case
whose harness check reads an output (a forged Markdown row, an unescaped HTML tag, an ssh_config
as ssh reads it) checks the same thing here. Where sparkfab answers a case differently from the
harness's first expectation by design, the case says so and asserts the designed answer."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.bench import run_dir_files
from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import FIFO, PAIR, bench, c

PAIR_TEXT = (REPO / "inventory/pair-1cable.yml").read_text()
PAIR_BLOCK = yaml.safe_dump(PAIR["all"]["vars"], sort_keys=False)  # "sparkfab:\n  cluster: ..."
PAIR_INI = "[sparks]\nspark-a ansible_host=10.0.0.21\nspark-b ansible_host=10.0.0.22\n"
SITE_INI = PAIR_INI + "[monitoring]\nprom1 ansible_host=10.0.0.99\n"
CFG_INV = "[defaults]\ninventory = inv.yml\n"
#: a Jinja lookup that, were it run, would leave a file in the case's directory (the runner's
#: checksums of the whole tree would find it)
PIPE = "{{ lookup('pipe', 'touch PWNED') }}"
#: a model name that would add a TTFT section of its own to report.md, were it not escaped
FORGED_MODEL = "m\n\n## TTFT (forged)\n\n| test | r |\n|---|---|\n| P1 | 0.001 s (forged) |"
DEEP = "[" * 990 + "]" * 990


def site(ini: str = PAIR_INI, block: str = PAIR_BLOCK, more: dict[str, str] | None = None) -> dict[str, str | bytes]:
    """An INI inventory with the sparkfab block in group_vars/all.yml (Ansible's reader), and
    `more` files beside them."""
    return {"hosts.ini": ini, "group_vars/all.yml": block, **(more or {})}


def grouped(group: str) -> str:
    return PAIR_BLOCK.replace("sparkfab:\n", f"sparkfab:\n  group: {group}\n", 1)


def run_meta(**fields: Any) -> dict[str, Any]:
    return {"url": "http://127.0.0.1:1", "model": "m", "label": "r", "plan": [], **fields}


def launchers_with_flags(flags: str | bytes) -> dict[str, str | bytes]:
    """A SPARKFAB_HOME (h/) holding sparkfab's own launchers, the vLLM flag table replaced."""
    files: dict[str, str | bytes] = {
        f"h/launchers/{p.name}": p.read_bytes() for p in (REPO / "launchers").iterdir() if p.is_file()
    }
    files["h/launchers/vllm-serve-flags.txt"] = flags
    return files


def ring(n: int) -> str:
    """A switchless ring of n Sparks, each one's p1 cabled to the next one's p0."""
    data = copy.deepcopy(PAIR)
    hosts = {f"s{i:03d}": {"ansible_host": f"10.1.{i // 250}.{i % 250 + 1}"} for i in range(n)}
    data["all"]["hosts"] = hosts
    names = list(hosts)
    block = data["all"]["vars"]["sparkfab"]
    block["cables"] = [{"ends": [f"{a}:p1", f"{b}:p0"]} for a, b in zip(names, names[1:] + names[:1], strict=True)]
    block["instances"] = {}
    block.pop("exporter", None)
    block["subnet_pool"] = "10.128.0.0/12"
    return yaml.safe_dump(data, sort_keys=False)


CASES = [
    # ---- the user's ansible.cfg and ANSIBLE_* variables
    c(
        "NEW_CFG_latin1",
        "validate",
        2,
        r"ansible\.cfg: Ansible's configuration is not UTF-8",
        files={"inv.yml": PAIR_TEXT, "ansible.cfg": (CFG_INV + "remote_user = caf").encode() + b"\xe9\n"},
        env={"ANSIBLE_CONFIG": "{d}/ansible.cfg"},
    ),
    c(
        "NEW_CFG_cwd_latin1_render",
        "render -o {d}/out",
        2,
        r"ansible\.cfg: Ansible's configuration is not UTF-8",
        files={"inv.yml": PAIR_TEXT, "ansible.cfg": (CFG_INV + "# caf").encode() + b"\xe9\n"},
        outputs=("out",),
    ),
    # by design: a secret that needs a lookup is left for Ansible to fill when it runs the play,
    # said in a note, never run while reading (the runner's checksums find a PWNED file)
    c(
        "NEW_ANS_become_lookup",
        "validate {d}/hosts.ini",
        0,
        r"ansible_become_password of spark-a, spark-b needs more than variables",
        files=site(more={"group_vars/sparks.yml": f'ansible_become_password: "{PIPE}"\n'}),
    ),
    c(
        "NEW_CFG_env_hostlist",
        "validate",
        2,
        r"ANSIBLE_INVENTORY|10\.0\.0\.21",
        env={"ANSIBLE_INVENTORY": "10.0.0.21,10.0.0.22,"},
    ),
    c("NEW_CFG_cwd_fifo_ini", "validate {d}/hosts.ini", 2, r"ansible\.cfg", files={**site(), "ansible.cfg": FIFO}),
    c(
        "NEW_CFG_env_fifo_ini",
        "validate {d}/hosts.ini",
        2,
        r"cfg/ansible\.cfg: Ansible's configuration is not a regular file",
        files={**site(), "cfg/ansible.cfg": FIFO},
        env={"ANSIBLE_CONFIG": "{d}/cfg/ansible.cfg"},
    ),
    c(
        "NEW_CFG_huge",
        "validate",
        2,
        r"ansible\.cfg.*(larger|bytes|MiB)",
        files={"inv.yml": PAIR_TEXT, "ansible.cfg": CFG_INV + "#" + "x" * (20 << 20) + "\n"},
        env={"ANSIBLE_CONFIG": "{d}/ansible.cfg"},
    ),
    # ---- vaults
    c(
        "NEW_VLT_pwfile_fifo",
        "validate {d}/hosts.ini --vault-password-file {d}/pw.fifo",
        2,
        r"pw\.fifo: is not a regular file",
        files={**site(), "pw.fifo": FIFO},
    ),
    c(
        "NEW_VLT_pwfile_devzero",
        "validate {d}/hosts.ini --vault-password-file /dev/zero",
        2,
        r"/dev/zero: is not a regular file",
        files=site(),
    ),
    c(
        "NEW_VLT_pwfile_dir",
        "validate {d}/hosts.ini --vault-password-file {d}/pwdir",
        2,
        r"pwdir",
        files={**site(), "pwdir/x": "y\n"},
    ),
    c(
        "NEW_VLT_wrong_password",
        "validate {d}/hosts.ini --vault-password-file {d}/pw2",
        2,
        r"all\.yml|vault|[Dd]ecrypt",
        files={**site(), "pw": "right\n", "pw2": "wrong\n"},
    ),
    c(
        "NEW_VLT_block_vaulted_render",
        "render {d}/hosts.ini --vault-password-file {d}/pw -o {d}/out",
        0,
        r"",
        files={**site(), "pw": "right\n"},
        outputs=("out",),
    ),
    # ---- bench --metadata and --label
    bench("NEW_BM_meta_nokey", "--metadata =x", 2, r"--metadata", outputs=("run",)),
    bench("NEW_BM_meta_newline", ("--metadata", "note=a\nb"), 2, r"--metadata", outputs=("run",)),
    bench("NEW_BM_meta_long", "--metadata note=" + "x" * 513, 2, r"--metadata", outputs=("run",)),
    bench("NEW_BM_meta_measured_key", "--metadata model_id=evil num_prompts=999", 0, r"", outputs=("run",)),
    bench("NEW_BM_label_newline", ("--label", "a\n## forged"), 2, r"--label", outputs=("run",)),
    # ---- report inputs: run.json fields that reach report.md and report.html
    c(
        "NEW_RPT_model_newline",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files=run_dir_files("r", meta=run_meta(model=FORGED_MODEL)),
        outputs=("out",),
    ),
    c(
        "NEW_RPT_label_pipe",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files=run_dir_files("r", meta=run_meta(label="a | b")),
        outputs=("out",),
    ),
    c(
        "NEW_RPT_meta_html",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files=run_dir_files("r", meta=run_meta(metadata={"note": "<script>alert(1)</script>"})),
        outputs=("out",),
    ),
    c(
        "NEW_RPT_meta_huge",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files={
            "r/run.json": lambda: json.dumps(run_meta(metadata={f"k{i}": "v" * 100 for i in range(50_000)})),
            "r/requests.jsonl": run_dir_files("r")["r/requests.jsonl"],
        },
        outputs=("out",),
    ),
    c(
        "NEW_RPT_plan_partial",
        "report {d}/r -o {d}/out",
        2,
        r"plan",
        files=run_dir_files("r", meta=run_meta(plan=[{"name": "P1"}])),
        outputs=("out",),
    ),
    # ---- site inventories: group:, hosts left out
    c(
        "NEW_SITE_leftout_hostile",
        "render {d}/hosts.ini -o {d}/out",
        0,
        r"",
        files=site(
            SITE_INI,
            grouped("sparks"),
            {
                "host_vars/prom1.yml": yaml.safe_dump(
                    {"ansible_host": "fe80::1%x\nSPARKFAB_INJECTED=1", "ansible_user": "root -oProxyCommand=x"}
                )
            },
        ),
        outputs=("out",),
    ),
    c("NEW_SITE_group_all", "validate {d}/hosts.ini", 2, r"\ball\b.*implicit", files=site(block=grouped("all"))),
    c(
        "NEW_SITE_group_of_others",
        "validate {d}/hosts.ini",
        2,
        r"prom1|monitoring",
        files=site(SITE_INI, grouped("monitoring")),
    ),
    # ---- the exporter block, init, completion
    c(
        "NEW_EXP_port_api",
        "validate {d}/inv.yml",
        2,
        r"exporter.*8000|8000.*llama",
        files={"inv.yml": PAIR_TEXT.replace("exporter: true", "exporter: {port: 8000}")},
    ),
    c("NEW_HELP_exporter", "exporter --help", 0, r""),
    c("NEW_INIT_devfull", "init pair -o /dev/full", 2, r"/dev/full"),
    c("NEW_INIT_trailing_slash", "init pair -o {d}/new.yml/", 2, r"new\.yml/"),
    # ---- the older cases the review found not clean
    c(
        "A_ini_jinja_ahost",
        "validate {d}/hosts.ini",
        2,
        r"ansible_host",
        files=site(f'[sparks]\nspark-a ansible_host="{PIPE}"\nspark-b ansible_host=10.0.0.22\n'),
    ),
    # by design: a login that needs a lookup is refused (sparkfab's own ssh, verify's and
    # preflight's, needs it before any play runs), and never run
    c(
        "A_ini_jinja_user_render",
        "render {d}/hosts.ini -o {d}/out",
        2,
        r"ansible_user",
        files=site(PAIR_INI + f'[sparks:vars]\nansible_user="{PIPE}"\n'),
        outputs=("out",),
    ),
    c(
        "EV_home_flags_fifo",
        "validate {d}/inv.yml",
        2,
        r"vllm-serve-flags\.txt",
        files={"inv.yml": PAIR_TEXT, **launchers_with_flags(FIFO)},
        env={"SPARKFAB_HOME": "{d}/h"},
    ),
    c(
        "Y_deep_990",
        "validate {d}/inv.yml",
        2,
        r"nests more than 200",
        files={"inv.yml": PAIR_TEXT.replace("{ansible_host: 10.0.0.21}", "{ansible_host: 10.0.0.21, x: " + DEEP + "}")},
    ),
    bench(
        "BN_root_text_counter",
        "--counters eth9 --source netdev --root {d}/fake",
        2,
        r"eth9|tx_bytes|fake",
        files={f"fake/sys/class/net/eth9/statistics/{x}_bytes": "abc\n" for x in ("tx", "rx")},
        outputs=("run",),
    ),
    # by design: a Spark managed at its loopback address is one sparkfab runs on (Ansible's local case)
    c(
        "N_ahost_loopback",
        "validate {d}/inv.yml",
        0,
        r"valid",
        files={"inv.yml": PAIR_TEXT.replace("ansible_host: 10.0.0.21", "ansible_host: 127.0.0.1")},
    ),
    c("A_ini_nul", "validate {d}/hosts.ini", 2, r"hosts\.ini", files=site(PAIR_INI + "x\x00y\n")),
    c(
        "H_300_ring_render",
        "render {d}/inv.yml -o {d}/out",
        0,
        r"",
        files={"inv.yml": lambda: ring(300)},
        outputs=("out",),
        seconds=120,
        slow=True,
    ),
]


def _vault(d: Path, rel: str, password: str) -> None:
    """Encrypt d/rel in place with ansible-vault, as a site keeps its secrets."""
    tool = Path(sys.executable).with_name("ansible-vault")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_VAULT")}
    argv = [str(tool), "encrypt", "--vault-password-file", str(d / password), str(d / rel)]
    res = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr


SETUP = {
    "NEW_VLT_wrong_password": lambda d: _vault(d, "group_vars/all.yml", "pw"),
    "NEW_VLT_block_vaulted_render": lambda d: _vault(d, "group_vars/all.yml", "pw"),
}


def _md_tables(text: str) -> list[str]:
    """Rows of report.md's tables whose cells differ in number from their header's."""
    bad, head = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            head = None
            continue
        cells = len(re.findall(r"(?<!\\)\|", line)) - 1
        if head is None:
            head = cells
        elif cells != head:
            bad.append(line)
    return bad


def _after(case_id: str, d: Path, err: str) -> None:
    """What the harness checks in a case's outputs, checked the same way."""
    if case_id == "NEW_BM_meta_measured_key":
        doc = json.loads((d / "run/result_P1.json").read_text())
        assert (doc["model_id"], doc["num_prompts"]) == ("fake-model", 1), doc
    elif case_id == "NEW_RPT_model_newline":
        md = (d / "out/report.md").read_text()
        assert not re.search(r"(?m)^\| P1 \| 0\.001 s \(forged\) \|", md) and "\n## TTFT (forged)" not in md
    elif case_id == "NEW_RPT_label_pipe":
        assert _md_tables((d / "out/report.md").read_text()) == []
    elif case_id == "NEW_RPT_meta_html":
        assert "<script>alert" not in (d / "out/report.html").read_text()
    elif case_id == "NEW_RPT_meta_huge":
        assert (d / "out/report.md").stat().st_size < 1 << 20
    elif case_id == "NEW_SITE_leftout_hostile":
        written = "".join(p.read_text(errors="replace") for p in (d / "out").rglob("*") if p.is_file())
        assert "prom1" not in written and "SPARKFAB_INJECTED" not in written
    elif case_id == "NEW_SITE_group_all":
        assert "this inventory has none" not in err
    elif case_id == "NEW_VLT_block_vaulted_render":
        assert (d / "out/inventory.yml").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_harness_case(case, tmp_path, capsys, monkeypatch, server):
    d, err = run(case, tmp_path, capsys, monkeypatch, server, setup=SETUP.get(case.id))
    _after(case.id, d, err)


# ---- cases the harness runs through sparkfab's functions, not a verb: the ssh_config verify,
#      preflight and discover write, and --limit as the verbs that reach hosts match it


def _pair_plan(tmp_path: Path) -> Any:
    from sparkfab.resolve import load_plan

    (tmp_path / "inv.yml").write_text(PAIR_TEXT)
    return load_plan(str(tmp_path / "inv.yml"))


LOGINS = {
    "NEW_API_cfg_user_proxycmd": (
        {"ansible.cfg": "[defaults]\nremote_user = ops\n  ProxyCommand touch PWNED\n"},
        {"ANSIBLE_CONFIG": "ansible.cfg"},
        r"remote_user",
    ),
    "NEW_API_env_user_newline": ({}, {"ANSIBLE_REMOTE_USER": "ops\nProxyCommand touch PWNED"}, r"ANSIBLE_REMOTE_USER"),
    "NEW_API_cfg_keyfile_newline": (
        {"ansible.cfg": "[defaults]\nprivate_key_file = k\n  LocalCommand touch x\n  PermitLocalCommand yes\n"},
        {"ANSIBLE_CONFIG": "ansible.cfg"},
        r"private_key_file",
    ),
}


@pytest.mark.parametrize("case_id", LOGINS)
def test_harness_login_case(case_id, tmp_path, monkeypatch):
    """A login from ansible.cfg or ANSIBLE_* that would smuggle an option into the ssh_config is
    refused by name, as the same value in the inventory is; no ssh_config is written."""
    from sparkfab.connection import for_plan
    from sparkfab.errors import UsageError

    files, env, culprit = LOGINS[case_id]
    plan = _pair_plan(tmp_path)
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    monkeypatch.chdir(tmp_path)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(UsageError, match=culprit):
        for_plan(plan, tmp_path / "work")
    assert not (tmp_path / "work/ssh_config").exists() and not (tmp_path / "PWNED").exists()


def test_harness_key_file_with_a_space(tmp_path, monkeypatch):
    """NEW_API_env_keyfile_space: a key file whose name holds a space and an option is one path to
    ssh (quoted in the ssh_config), never an option of its own."""
    from sparkfab.connection import for_plan

    plan = _pair_plan(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANSIBLE_PRIVATE_KEY_FILE", "/k -oProxyCommand=x")
    cfg = for_plan(plan, tmp_path / "work").ssh_config
    seen = subprocess.run(
        ["ssh", "-G", "-F", cfg, "10.0.0.21"], capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL
    ).stdout.splitlines()
    assert "identityfile /k -oProxyCommand=x" in seen and not [x for x in seen if x.startswith("proxycommand")]


LIMITS = {
    "NEW_LIM_at_missing": ("@nofile", r"nofile"),
    "NEW_LIM_at_fifo": ("@lim.fifo", r"lim\.fifo"),
    "NEW_LIM_regex_paren": ("~(", r"~\("),
    "NEW_LIM_regex_bracket": ("~[", r"~\[.*not a regular expression"),
    "NEW_LIM_none": ("nohost", r"selects no host"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case_id", LIMITS)
def test_harness_limit_case(case_id, tmp_path, monkeypatch):
    """A --limit that is no pattern, names a file that is none, or selects nothing is refused by
    name before any host is contacted, and never as a fault of the inventory."""
    from sparkfab.cli import main
    from sparkfab.cluster.limits import files_here, selected
    from sparkfab.errors import UsageError

    plan = _pair_plan(tmp_path)
    assert main(["render", str(tmp_path / "inv.yml"), "-o", str(tmp_path / "out")]) == 0
    os.mkfifo(tmp_path / "lim.fifo")
    monkeypatch.chdir(tmp_path)
    limit, culprit = LIMITS[case_id]
    with pytest.raises(UsageError, match=culprit) as err:
        selected(plan, tmp_path / "out", files_here(limit))
    assert "could not read the inventory" not in str(err.value)


@pytest.mark.slow
def test_harness_bench_pipes_then_report(tmp_path, capsys, server):
    """NEW_BM_meta_pipe_report: a pipe in --metadata and --label, then report: every row of
    report.md's tables has its header's number of cells."""
    from sparkfab.cli import main

    url = server("good")
    argv = f"bench --url {url} --model m --plan P1 --rounds 1 --warmup 0 --idle-seconds 0 --output-tokens 4"
    assert main([*argv.split(), "--metadata", "note=a|b", "--label", "x|y", "-o", str(tmp_path / "run")]) == 0
    assert main(["report", str(tmp_path / "run"), "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    md = (tmp_path / "out/report.md").read_text()
    assert "x\\|y" in md and _md_tables(md) == []


def test_harness_completion_hostile_words(tmp_path, capsys):
    """NEW_CO_hostile_words: the bash completion, sourced, completes words holding $( ) and
    backticks without running them (and it did complete: every call ran, a plain word gets its
    verb)."""
    from sparkfab.cli import main

    assert main(["completion", "bash"]) == 0
    words = ["$(touch PWNED1)", "`touch PWNED2`", "-$(touch PWNED3)"]
    script = capsys.readouterr().out + "".join(
        f"COMP_WORDS=(sparkfab {verb} '{w}'); COMP_CWORD={n}; _sparkfab; echo called\n"
        for w in words
        for verb, n in (("", 1), ("init", 2), ("validate", 2))
    )
    script += 'COMP_WORDS=(sparkfab vali); COMP_CWORD=1; _sparkfab; echo "plain:${COMPREPLY[*]}"\n'
    res = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert res.stdout.count("called\n") == 9 and "plain:validate" in res.stdout, res.stdout + res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a read-only tmpfs (root)")
@pytest.mark.slow
def test_harness_read_only_home(tmp_path, capsys, monkeypatch, server):
    """EV_home_ro_ini: a read-only HOME does not stop validate from reading an INI inventory
    (Ansible's local temporary directory is not the user's home)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], check=True)
    try:
        monkeypatch.setenv("HOME", str(ro))
        case = c("EV_home_ro_ini", "validate {d}/hosts.ini", 0, r"valid", files=site())
        run(case, tmp_path, capsys, monkeypatch, server)
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)
