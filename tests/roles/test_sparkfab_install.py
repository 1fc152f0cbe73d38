"""The files role's module, run directly the way Ansible runs it (JSON arguments in, JSON out)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

MODULE = REPO / "roles/sparkfab_files/library/sparkfab_install.py"


@pytest.fixture(autouse=True)
def _module_utils(collections, monkeypatch):
    """The module imports the collection's module_utils, which Ansible ships beside it."""
    monkeypatch.setenv("PYTHONPATH", str(collections))


def _run(tmp_path, bundle, env=None, **args):
    """The module as the role runs it: the bundle's JSON text in its arguments."""
    args = {"bundle_text": json.dumps(bundle), **args}
    (tmp_path / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    res = subprocess.run(
        [sys.executable, str(MODULE), str(tmp_path / "args.json")], capture_output=True, text=True, env=env
    )
    return json.loads(res.stdout)


def _bundle(tmp_path, **files):
    return {"files": {str(tmp_path / "etc" / k): v for k, v in files.items()}}


def test_check_diff_then_install_then_nothing_to_do(tmp_path):
    b = _bundle(
        tmp_path,
        **{
            "nccl.env": {"content": "A=1\n", "mode": "0644", "kind": "nccl"},
            "run.sh": {"content": "echo\n", "mode": "0755", "kind": "launch"},
        },
    )
    check = _run(tmp_path, b, _ansible_check_mode=True, _ansible_diff=True)
    assert check["changed"] and check["kinds"] == ["nccl", "launch"]
    assert [d["after"] for d in check["diff"]] == ["A=1\n", "echo\n"]
    assert not (tmp_path / "etc").exists()
    # the push's check: a preview outside check mode writes nothing either
    preview = _run(tmp_path, b, preview=True)
    assert preview["changed"] and preview["files"] == check["files"] and not (tmp_path / "etc").exists()
    first = _run(tmp_path, b)
    assert first["changed"] and "diff" not in first
    st = os.stat(tmp_path / "etc/run.sh")
    assert oct(st.st_mode & 0o7777) == "0o755" and (st.st_uid, st.st_gid) == (0, 0)
    assert (tmp_path / "etc/nccl.env").read_text() == "A=1\n"
    assert sorted(p.name for p in (tmp_path / "etc").iterdir()) == ["nccl.env", "run.sh"]  # no temporaries left
    again = _run(tmp_path, b)
    assert again["changed"] is False and again["files"] == []
    assert _run(tmp_path, b, preview=True)["changed"] is False
    # the bundle's text stays out of what the module returns (Ansible's events, -v output)
    assert "A=1" not in json.dumps(again)


def test_a_bundle_file_on_the_host_installs_the_same(tmp_path):
    b = _bundle(tmp_path, **{"nccl.env": {"content": "A=1\n", "mode": "0644", "kind": "nccl"}})
    (tmp_path / "bundle.json").write_text(json.dumps(b))
    (tmp_path / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"bundle": str(tmp_path / "bundle.json")}}))
    res = subprocess.run([sys.executable, str(MODULE), str(tmp_path / "args.json")], capture_output=True, text=True)
    assert json.loads(res.stdout)["files"] == [str(tmp_path / "etc/nccl.env")]
    assert (tmp_path / "etc/nccl.env").read_text() == "A=1\n"


def test_a_mode_change_alone_is_a_change_with_its_own_diff(tmp_path):
    b = _bundle(tmp_path, **{"run.sh": {"content": "echo\n", "mode": "0755", "kind": "launch"}})
    _run(tmp_path, b)
    os.chmod(tmp_path / "etc/run.sh", 0o644)
    res = _run(tmp_path, b, _ansible_diff=True)
    assert res["changed"] and res["diff"][0]["before"] == "mode 0644\n" and res["diff"][0]["after"] == "mode 0755\n"
    assert os.stat(tmp_path / "etc/run.sh").st_mode & 0o777 == 0o755


def test_kinds_limit_what_is_installed(tmp_path):
    b = _bundle(
        tmp_path,
        **{
            "nccl.env": {"content": "A=1\n", "mode": "0644", "kind": "nccl"},
            "fw.nft": {"content": "table\n", "mode": "0644", "kind": "control"},
        },
    )
    res = _run(tmp_path, b, kinds=["control"])
    assert res["files"] == [str(tmp_path / "etc/fw.nft")] and not (tmp_path / "etc/nccl.env").exists()


def test_an_unreadable_bundle_fails_with_its_path(tmp_path):
    (tmp_path / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"bundle": str(tmp_path / "missing.json")}}))
    res = subprocess.run([sys.executable, str(MODULE), str(tmp_path / "args.json")], capture_output=True, text=True)
    out = json.loads(res.stdout)
    assert out["failed"] and out["msg"].startswith(f"cannot read bundle {tmp_path}/missing.json: ")


def test_a_file_that_cannot_be_written_fails_with_its_path(tmp_path):
    (tmp_path / "etc").write_text("a file where a directory should be")
    res = _run(tmp_path, _bundle(tmp_path, **{"x.conf": {"content": "1\n", "mode": "0644", "kind": "nccl"}}))
    assert res["failed"] and res["msg"].startswith(f"cannot write {tmp_path}/etc/x.conf: ")


def test_netplan_files_are_left_to_the_netplan_module_unless_named(tmp_path):
    b = _bundle(
        tmp_path,
        **{
            "nccl.env": {"content": "A=1\n", "mode": "0644", "kind": "nccl"},
            "60-sparkfab.yaml": {"content": "network: {}\n", "mode": "0600", "kind": "netplan"},
        },
    )
    assert _run(tmp_path, b)["files"] == [str(tmp_path / "etc/nccl.env")]
    assert _run(tmp_path, b, kinds=["netplan"])["files"] == [str(tmp_path / "etc/60-sparkfab.yaml")]


def test_converge_compares_the_kernels_sysctls_with_the_installed_file(tmp_path):
    """Check mode only: the kernel of this machine is read, never written. A key the kernel
    holds as the file says is no drift; one it holds otherwise is, and would be loaded."""
    conf = tmp_path / "etc/sysctl.d/60-sparkfab.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("# sparkfab\nkernel.ostype = Linux\n")
    b = _bundle(tmp_path, **{"nccl.env": {"content": "A=1\n", "mode": "0644", "kind": "nccl"}})
    _run(tmp_path, b)
    same = _run(tmp_path, b, converge=True, root=str(tmp_path), _ansible_check_mode=True)
    assert same["changed"] is False and same["drift"] == [] and same["loaded"] is False
    conf.write_text("kernel.ostype=Plan9\n;comment\nkernel/ostype = Linux\nnet.sparkfab.none = 1\n")
    other = _run(tmp_path, b, converge=True, root=str(tmp_path), _ansible_check_mode=True)
    # a key with slashes is sysctl's to read (as /proc/sys/kernel/ostype: no drift); one the kernel lacks is drift
    assert other["drift"] == ["sysctl kernel.ostype is not Plan9", "sysctl net.sparkfab.none is not 1"]
    assert other["loaded"] and other["changed"]


def test_secrets_replace_their_line_and_stay_out_of_the_result(tmp_path):
    env = tmp_path / "secrets.env"
    env.write_text("OTHER=keep\nHF_TOKEN=old\n")
    env.chmod(0o644)
    args = {"secrets_file": str(env), "secret_names": ["HF_TOKEN", "VLLM_API_KEY", "UNSET"]}
    values = {"HF_TOKEN": "hf_s3cret", "VLLM_API_KEY": "sk-s3cret", "NOT_ASKED": "x"}
    dry = _run(tmp_path, {"files": {}}, secrets=values, _ansible_check_mode=True, **args)
    assert dry["changed"] and dry["secrets"] == ["HF_TOKEN", "VLLM_API_KEY"]
    assert env.read_text() == "OTHER=keep\nHF_TOKEN=old\n"
    done = _run(tmp_path, {"files": {}}, secrets=values, **args)
    assert env.read_text() == "OTHER=keep\nHF_TOKEN=hf_s3cret\nVLLM_API_KEY=sk-s3cret\n"
    assert env.stat().st_mode & 0o777 == 0o600
    assert "s3cret" not in json.dumps(done)
    again = _run(tmp_path, {"files": {}}, secrets=values, **args)
    assert again["changed"] is False and again["secrets"] == []


def _tool(bin_dir, name, body):
    """A stand-in for a host's systemctl or ufw that logs its calls (the lab's ring tests run the
    real ones on booted Sparks: tests/lab/test_lab_control.py)."""
    f = bin_dir / name
    f.write_text(f'#!/bin/sh\necho {name} "$*" >> {bin_dir}/calls\n{body}\n')
    f.chmod(0o755)


def test_the_control_plane_units_ufw_and_docker_user_rules_are_made_to_hold(tmp_path):
    """With the control plane over the fabric, the same module run installs a unit whose file
    differs (one daemon-reload), enables one that is not, adds the ufw rules ufw lacks and runs
    the DOCKER-USER script on a relay; a second run does nothing and says so (changed=false).
    Check mode and preview (the push's check) say what a run would do and only read: systemd's
    and ufw's state, the script's --check count."""
    root, bin_dir = tmp_path / "root", tmp_path / "bin"
    bin_dir.mkdir()
    (root / "run/systemd/system").mkdir(parents=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    cp = root / "etc/sparkfab"
    cp.mkdir(parents=True)
    (cp / "sparkfab-firewall.service").write_text("[Unit]\n")
    (cp / "ufw.rules").write_text("# sparkfab\nallow in on enp1s0f1np1 to any port 22 proto tcp\n\n")
    (cp / "docker-user.sh").write_text(
        f'#!/bin/sh\necho docker-user.sh "$*" >> {bin_dir}/calls\n'
        f'if [ "$1" = --check ]; then [ -e {tmp_path}/fwd ] && echo missing=0 || echo missing=2; exit 0; fi\n'
        f"if [ -e {tmp_path}/fwd ]; then echo added=0; else touch {tmp_path}/fwd; echo added=2; fi\n"
    )
    (cp / "docker-user.sh").chmod(0o755)
    _tool(
        bin_dir,
        "systemctl",
        f'case "$1" in is-enabled) [ -e {tmp_path}/enabled ];; enable) touch {tmp_path}/enabled;; esac',
    )
    _tool(
        bin_dir,
        "ufw",
        f'case "$1" in status) echo "Status: active";; *) if [ -e {tmp_path}/ufw ]; '
        f'then echo "Skipping adding existing rule"; else touch {tmp_path}/ufw; echo "Rule added"; fi;; esac',
    )
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    args = {"control_plane": ["sparkfab-firewall.service"], "forwarding": True, "root": str(root)}
    would = [
        "installed sparkfab-firewall.service",
        "enabled sparkfab-firewall.service",
        "ufw: its rules are compared when they are added",
        "DOCKER-USER: missing=2",
    ]
    reads = ["systemctl is-enabled --quiet sparkfab-firewall.service", "ufw status", "docker-user.sh --check"]
    for dry_args in ({"_ansible_check_mode": True}, {"preview": True}):
        dry = _run(tmp_path, {"files": {}}, env, **dry_args, **args)
        assert dry["changed"] is True and dry["control_plane"] == would
        assert (bin_dir / "calls").read_text().splitlines() == reads
        assert not (root / "etc/systemd/system/sparkfab-firewall.service").exists()
        assert not (tmp_path / "fwd").exists() and not (tmp_path / "enabled").exists()
        (bin_dir / "calls").unlink()
    first = _run(tmp_path, {"files": {}}, env, **args)
    assert first["changed"] and first["control_plane"] == [
        "installed sparkfab-firewall.service",
        "enabled sparkfab-firewall.service",
        "ufw added: allow in on enp1s0f1np1 to any port 22 proto tcp",
        "DOCKER-USER: added=2",
    ]
    assert (root / "etc/systemd/system/sparkfab-firewall.service").read_text() == "[Unit]\n"
    calls = (bin_dir / "calls").read_text().splitlines()
    assert (
        calls.count("systemctl daemon-reload") == 1 and "ufw allow in on enp1s0f1np1 to any port 22 proto tcp" in calls
    )
    again = _run(tmp_path, {"files": {}}, env, **args)
    assert again["changed"] is False and again["control_plane"] == []
    assert (bin_dir / "calls").read_text().count("daemon-reload") == 1
    # where ufw is active its rules count as a change in a preview (ufw compares them only when
    # it adds them); without ufw a preview of a host that holds everything finds nothing
    assert _run(tmp_path, {"files": {}}, env, preview=True, **args)["control_plane"] == [would[2]]
    (bin_dir / "ufw").unlink()
    assert _run(tmp_path, {"files": {}}, env, preview=True, **args)["changed"] is False
    # a step that fails ends the run naming it
    (cp / "docker-user.sh").write_text("#!/bin/sh\necho 'iptables: Permission denied' >&2; exit 4\n")
    failed = _run(tmp_path, {"files": {}}, env, **args)
    assert failed["failed"] and failed["msg"] == f"{cp}/docker-user.sh failed (4): iptables: Permission denied"


def test_an_empty_list_of_kinds_installs_nothing(tmp_path):
    """Tags that choose no kind of file (`apply --tags netplan`) leave the files alone: an empty
    list is none, and only an absent one means every kind but netplan."""
    b = _bundle(tmp_path, **{"nccl.env": {"content": "A=1\n", "mode": "0644", "kind": "nccl"}})
    res = _run(tmp_path, b, kinds=[])
    assert res["files"] == [] and not res["changed"] and not (tmp_path / "etc").exists()


def test_a_host_without_nft_is_told_the_package_that_supplies_it(tmp_path):
    """A Spark as shipped has no nftables: the control plane's firewall cannot be loaded, and the
    install says which package to install instead of a bare "No such file"."""
    fw = tmp_path / "etc/sparkfab/firewall.nft"
    b = {"files": {str(fw): {"content": "table inet sparkfab {}\n", "mode": "0644", "kind": "control"}}}
    env = {**os.environ, "PATH": str(tmp_path / "no-programs-here")}
    res = _run(tmp_path, b, env=env, kinds=["control"], converge=True, root=str(tmp_path))
    assert res["failed"] and res["msg"].startswith("nft is not installed on this host: `apt-get install nftables`")


def test_the_packages_a_host_lacks_for_its_files_are_named_before_the_install(tmp_path):
    """The push's check names the packages whose program the files need and the host lacks
    (playbooks/fabric.yml installs them with apt before the files role): lldpd for the LLDP
    settings, nftables for the firewall table, only for the kinds this run installs; a host that
    lacks one counts as changed in the preview, so that its play does not end before the apt task."""
    b = {
        "files": {
            str(tmp_path / "etc/sparkfab/firewall.nft"): {
                "content": "table inet sparkfab {}\n",
                "mode": "0644",
                "kind": "control",
            },
            str(tmp_path / "etc/lldpd.d/sparkfab.conf"): {
                "content": "configure lldp portidsubtype ifname\n",
                "mode": "0644",
                "kind": "lldp",
            },
            str(tmp_path / "etc/sparkfab/nccl.env"): {"content": "A=1\n", "mode": "0644", "kind": "nccl"},
        }
    }
    bare = {**os.environ, "PATH": str(tmp_path / "no-programs-here")}
    every = _run(tmp_path, b, env=bare, preview=True, root=str(tmp_path))
    assert every["packages"] == ["lldpd", "nftables"] and every["changed"]
    assert _run(tmp_path, b, env=bare, preview=True, kinds=["lldp"], root=str(tmp_path))["packages"] == ["lldpd"]
    # a flip installs only the NCCL environment: nothing to install for it
    assert _run(tmp_path, b, env=bare, preview=True, kinds=["nccl"], root=str(tmp_path))["packages"] == []
    # with both programs on the PATH (stand-ins that only need to exist), nothing is missing
    programs = tmp_path / "bin"
    programs.mkdir()
    for name in ("nft", "lldpcli"):
        (programs / name).write_text("#!/bin/sh\nexit 0\n")
        (programs / name).chmod(0o755)
    found = _run(
        tmp_path, b, env={**os.environ, "PATH": str(programs)}, preview=True, kinds=["lldp"], root=str(tmp_path)
    )
    assert found["packages"] == []
