#!/usr/bin/python
"""Ansible module: install the files of a sparkfab bundle on this host in one run, and make the
kernel hold what they say (sysctls, the firewall table, LLDP settings) and systemd, ufw and
Docker keep it (the control plane's units, ufw rules and DOCKER-USER rules)."""

DOCUMENTATION = r"""
module: sparkfab_install
author: sparkfab developers (!UNKNOWN)
short_description: Install the files of a sparkfab bundle (path -> content, mode, kind) in one run
description:
  - One module run per host instead of one C(copy) per file.
  - Writes are atomic (temporary file in the same directory, then rename) and owned by root.
  - Files whose content and mode already match are left alone, so a second run changes nothing.
  - Files of kind C(netplan) are left to C(sparkfab_netplan) unless C(kinds) names them.
  - With C(converge), the live sysctls and the firewall table are compared with the installed
    files, and loaded when a file of kind C(control) changed or the kernel holds something
    else (a run that died before loading them, a change by hand).
  - LLDP settings are reloaded (C(lldpcli -c)) when theirs changed.
  - With C(preview), the run changes nothing and says what a run would change, as check mode
    does (the check every host runs before any host installs anything).
  - Supports check mode and diff mode.
options:
  bundle:
    description: 'Path on the host of the bundle, JSON C({"files": {path: {content, mode, kind}}}).'
    type: path
  bundle_text:
    description:
      - The bundle itself, as JSON text (from the controller, e.g. a C(file) lookup), instead of C(bundle).
      - Kept out of the logs and the run's events (its files are in the rendered tree).
    type: str
  kinds:
    description: Install only files of these kinds (none when empty; all but C(netplan) when not given).
    type: list
    elements: str
  converge:
    description: Also compare the kernel's sysctls and firewall table with the files and load them where they differ.
    type: bool
    default: false
  control_plane:
    description: The systemd units of the control plane to install from C(/etc/sparkfab) and enable (none without).
    type: list
    elements: str
  forwarding:
    description: With C(control_plane), this host relays fabric control traffic (DOCKER-USER rules).
    type: bool
    default: false
  root:
    description: Prefix of the paths C(converge) and C(control_plane) read and write (tests).
    type: path
    default: /
  secrets:
    description:
      - Values for the host's secrets file (name -> value), kept out of the logs and the run's events.
      - Only the names in C(secret_names) are written; each replaces its C(NAME=) line or is added.
    type: dict
    default: {}
  secret_names:
    description: The names the engine reads from the secrets file.
    type: list
    elements: str
    default: []
  secrets_file:
    description: The host's secrets file (root-only, mode 0600).
    type: path
    default: /etc/sparkfab/secrets.env
  preview:
    description:
      - Change nothing and say what a run would change (as check mode), the control plane included.
      - ufw's rules count as a change where ufw is active (ufw compares them only when it adds them).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Install every file of this host's bundle but its netplan files, and make the kernel hold them
  sparkfab.fabric.sparkfab_install:
    bundle_text: "{{ lookup('ansible.builtin.file', inventory_dir ~ '/bundles/' ~ inventory_hostname ~ '.json') }}"
    converge: true

- name: Push only the NCCL environment (a link-speed flip)
  sparkfab.fabric.sparkfab_install:
    bundle: /tmp/spark-01.json
    kinds: [nccl]

- name: Say what a run would change, changing nothing, outside check mode
  sparkfab.fabric.sparkfab_install:
    bundle: /tmp/spark-01.json
    preview: true
  register: pending
"""

RETURN = r"""
files:
  description: Paths that were (or in check mode would be) written.
  type: list
  returned: always
kinds:
  description: Kinds of the files in C(files), in first-seen order.
  type: list
  returned: always
drift:
  description: With C(converge), what the kernel held that the files do not say, a line each.
  type: list
  returned: always
loaded:
  description: With C(converge), whether the sysctls and the firewall were (or would be) loaded.
  type: bool
  returned: always
control_plane:
  description:
    - With C(control_plane), what was (or in check mode would be) done, a line each.
    - C(installed UNIT), C(enabled UNIT), C(ufw added RULE), C(DOCKER-USER ...).
  type: list
  returned: always
secrets:
  description: The names whose line in the secrets file was (or would be) written.
  type: list
  returned: always
packages:
  description:
    - The Debian packages this host lacks that the files it installs need (C(lldpd) for the LLDP
      settings, C(nftables) for the firewall table), for C(ansible.builtin.apt) to install first.
    - A host that lacks one counts as changed in C(preview) (its install would fail without it).
  type: list
  returned: always
"""

import json
import os
import shutil
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfab.fabric.plugins.module_utils.sparkfab_host import run, write_atomically

SYSCTL = "etc/sysctl.d/60-sparkfab.conf"
FIREWALL = "etc/sparkfab/firewall.nft"
LISTING = "etc/sparkfab/firewall.listing"
LLDP = "etc/lldpd.d/sparkfab.conf"
UFW_RULES = "etc/sparkfab/ufw.rules"
DOCKER_USER = "etc/sparkfab/docker-user.sh"


def current(path):
    """(content, mode) of the file at path, or (None, None) when it does not exist."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read(), stat.S_IMODE(st.st_mode)


def _chosen(spec, kinds):
    """Whether a file of the bundle is one of `kinds` (None: every kind but netplan)."""
    return spec["kind"] in kinds if kinds is not None else spec["kind"] != "netplan"


def changes(bundle, kinds, with_diff):
    """[(path, spec, diff or None)] for the files whose content or mode differ from the bundle."""
    out = []
    for path, spec in sorted(bundle["files"].items()):
        if not _chosen(spec, kinds):
            continue
        mode = int(spec["mode"], 8)
        old, old_mode = current(path)
        if old == spec["content"] and old_mode == mode:
            continue
        diff = None
        if with_diff:
            before, after = old or "", spec["content"]
            if old == spec["content"]:
                before, after = f"mode {old_mode:04o}\n", f"mode {mode:04o}\n"
            diff = {"before_header": path, "after_header": path, "before": before, "after": after}
        out.append((path, spec, diff))
    return out


def _words(text):
    return " ".join(text.split())


def _sysctl(key):
    """(rc, value) of a sysctl as `sysctl -n` gives it: read from /proc/sys where the key names a
    file there (dots are separators, as sysctl reads a key without a slash), else from sysctl."""
    if "/" not in key:
        try:
            with open("/proc/sys/" + key.replace(".", "/"), encoding="utf-8") as f:
                return 0, f.read()
        except OSError:
            pass
    rc, out, _err = run(["sysctl", "-n", key])
    return rc, out


def drift(root):
    """What the kernel holds against the installed sysctl file and the firewall table as last
    loaded (its listing then); nothing for a file that is not there."""
    sysctl, firewall, listing = (os.path.join(root, x) for x in (SYSCTL, FIREWALL, LISTING))
    out = []
    if os.path.exists(sysctl):
        with open(sysctl, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line or line[0] in "#;" or "=" not in line:
                    continue
                key, want = (_words(x) for x in line.split("=", 1))
                rc, live = _sysctl(key)
                if rc != 0 or _words(live) != want:
                    out.append(f"sysctl {key} is not {want}")
    if os.path.exists(firewall):
        rc, live, _err = run(["nft", "-s", "list", "table", "inet", "sparkfab"])
        loaded = current(listing)[0] or ""
        if rc != 0 or not live.strip() or live.rstrip("\n") != loaded.rstrip("\n"):
            out.append("table inet sparkfab is not the one last loaded")
    return out


#: the Debian package of each program the install runs, for a host that lacks it (a Spark as
#: shipped has no nftables)
PACKAGES = {"nft": "nftables", "sysctl": "procps", "systemctl": "systemd", "ufw": "ufw", "lldpcli": "lldpd"}
#: the files that need a program to take effect (the LLDP settings lldpd reads, the firewall
#: table nft loads): the packages a host lacks are installed before them (playbooks/fabric.yml)
NEEDS = {LLDP: "lldpcli", FIREWALL: "nft"}


def missing_packages(bundle, kinds, root):
    """The packages whose program this host lacks, for the bundle's files of `kinds` that need one."""
    out = []
    for path, spec in sorted(bundle["files"].items()):
        program = NEEDS.get(os.path.relpath(path, root))
        if program and _chosen(spec, kinds) and shutil.which(program) is None and PACKAGES[program] not in out:
            out.append(PACKAGES[program])
    return out


def _must(module, args):
    """stdout of a command that has to succeed; the run fails naming it otherwise (and the
    package that supplies it, where the program is not installed)."""
    rc, out, err = run(args)
    if rc == 127 and shutil.which(args[0]) is None:
        package = PACKAGES.get(args[0], args[0])
        module.fail_json(msg=f"{args[0]} is not installed on this host: `apt-get install {package}` ({' '.join(args)})")
    if rc != 0:
        module.fail_json(msg=f"{' '.join(args)} failed ({rc}): {(err or out).strip()[-1000:]}")
    return out


def load(module, root):
    """Load the sysctl file and the firewall table, and keep the table's listing as loaded."""
    sysctl, firewall, listing = (os.path.join(root, x) for x in (SYSCTL, FIREWALL, LISTING))
    if os.path.exists(sysctl):
        _must(module, ["sysctl", "-q", "-p", sysctl])
    if os.path.exists(firewall):
        _must(module, ["nft", "-f", firewall])
        write_atomically(listing, _must(module, ["nft", "-s", "list", "table", "inet", "sparkfab"]), 0o644)


def control_plane(module, root, dry, pending):
    """The units installed and enabled where systemd runs the host, the ufw rules added where ufw
    is active, DOCKER-USER where the host forwards: a line per thing done. With `dry`, a line
    per thing to be done and nothing changed; `pending` (path -> content) are the files this
    run writes, not written yet."""
    done = []
    if os.path.isdir(os.path.join(root, "run/systemd/system")):
        done += _units(module, root, module.params["control_plane"], dry, pending)
    if shutil.which("ufw") and run(["ufw", "status"])[1].startswith("Status: active"):
        done += ["ufw: its rules are compared when they are added"] if dry else _ufw(module, root)
    if module.params["forwarding"]:
        # the script as installed; with `dry` it only counts (a script about to be replaced is
        # a change by itself and is not run)
        script = os.path.join(root, DOCKER_USER)
        if dry and script in pending:
            done.append("DOCKER-USER: compared when its script is installed")
        else:
            out = _must(module, [script, "--check"] if dry else [script]).strip()
            if "added=0" not in out and "missing=0" not in out:
                done.append(f"DOCKER-USER: {out}")
    return done


def _units(module, root, units, dry, pending):
    """Each unit whose file differs installed from /etc/sparkfab (one daemon-reload), each unit
    not enabled enabled."""
    done, fresh = [], False
    for unit in units:
        src, dst = (os.path.join(root, d, unit) for d in ("etc/sparkfab", "etc/systemd/system"))
        want = current(src)[0]
        if want is None:
            want = pending.get(src)  # comes with this run, not written yet
        if want is None:
            module.fail_json(msg=f"{src} is not there: the control files come with this run")
        if want != current(dst)[0]:
            if not dry:
                write_atomically(dst, want, 0o644)
            fresh = True
            done.append(f"installed {unit}")
    if fresh and not dry:
        _must(module, ["systemctl", "daemon-reload"])
    for unit in units:
        if run(["systemctl", "is-enabled", "--quiet", unit])[0] != 0:
            if not dry:
                _must(module, ["systemctl", "enable", "--quiet", unit])
            done.append(f"enabled {unit}")
    return done


def _ufw(module, root):
    """The rules of ufw.rules that ufw lacks, added (`ufw RULE` skips one it has)."""
    with open(os.path.join(root, UFW_RULES), encoding="utf-8") as f:
        rules = [line.split() for line in f if line.strip() and not line.startswith("#")]
    return [f"ufw added: {' '.join(rule)}" for rule in rules if "Skipping" not in _must(module, ["ufw", *rule])]


def secrets_text(old, values):
    """The secrets file with a C(NAME=value) line per value: the last line of that name is
    replaced, or the line added (as lineinfile does); returns (text, names written)."""
    lines = old.splitlines() if old else []
    written = []
    for name, value in values.items():
        line = f"{name}={value}"
        at = [i for i, x in enumerate(lines) if x.startswith(f"{name}=")]
        if at and lines[at[-1]] == line:
            continue
        if at:
            lines[at[-1]] = line
        else:
            lines.append(line)
        written.append(name)
    return "".join(x + "\n" for x in lines), written


def put_secrets(module, dry):
    p = module.params
    values = {n: str(p["secrets"][n]) for n in dict.fromkeys(p["secret_names"]) if n in p["secrets"]}
    if not values:
        return []
    path = p["secrets_file"]
    old, mode = current(path)
    text, names = secrets_text(old, values)
    owner = os.stat(path).st_uid if old is not None else None
    if names or mode != 0o600 or owner != 0:
        if not dry:
            try:
                write_atomically(path, text, 0o600)
            except OSError as e:
                module.fail_json(msg=f"cannot write {path}: {e}")
        return names or ["(mode)"]
    return []


def read_bundle(module):
    path = module.params["bundle"]
    try:
        if path is None:
            return json.loads(module.params["bundle_text"])
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        module.fail_json(msg=f"cannot read bundle {path or '(text)'}: {e}")


def main():
    module = AnsibleModule(
        argument_spec={
            "bundle": {"type": "path"},
            "bundle_text": {"type": "str", "no_log": True},
            "kinds": {"type": "list", "elements": "str"},
            "converge": {"type": "bool", "default": False},
            "control_plane": {"type": "list", "elements": "str"},
            "forwarding": {"type": "bool", "default": False},
            "root": {"type": "path", "default": "/"},
            "secrets": {"type": "dict", "default": {}, "no_log": True},
            "secret_names": {"type": "list", "elements": "str", "default": [], "no_log": False},  # names, not secrets
            "secrets_file": {"type": "path", "default": "/etc/sparkfab/secrets.env"},
            "preview": {"type": "bool", "default": False},
        },
        required_one_of=[["bundle", "bundle_text"]],
        mutually_exclusive=[["bundle", "bundle_text"]],
        supports_check_mode=True,
    )
    dry = module.check_mode or module.params["preview"]
    given = module.params["kinds"]
    bundle = read_bundle(module)
    todo = changes(bundle, None if given is None else set(given), module._diff)
    written, kinds = [], []
    for path, spec, _diff in todo:
        if not dry:
            try:
                write_atomically(path, spec["content"], int(spec["mode"], 8))
            except OSError as e:
                module.fail_json(msg=f"cannot write {path}: {e}", files=written, kinds=kinds)
        written.append(path)
        if spec["kind"] not in kinds:
            kinds.append(spec["kind"])
    secrets = put_secrets(module, dry)
    result = {"changed": bool(written or secrets), "files": written, "kinds": kinds, "drift": [], "loaded": False}
    result["secrets"] = secrets
    result["packages"] = missing_packages(bundle, None if given is None else set(given), module.params["root"])
    result["changed"] = result["changed"] or bool(module.params["preview"] and result["packages"])
    if module.params["converge"]:
        # dry, the files are not written: what the kernel holds is compared with the installed
        # ones, and a changed control file would be loaded
        root = module.params["root"]
        result["drift"] = drift(root)
        result["loaded"] = bool(result["drift"]) or "control" in kinds
        if result["loaded"] and not dry:
            load(module, root)
        result["changed"] = result["changed"] or result["loaded"]
    if "lldp" in kinds and not dry:
        # lldpd may not run (yet): it reads its settings when it starts
        run(["lldpcli", "-c", os.path.join(module.params["root"], LLDP)])
    result["control_plane"] = []
    if module.params["control_plane"] is not None:
        pending = {path: spec["content"] for path, spec, _diff in todo} if dry else {}
        result["control_plane"] = control_plane(module, module.params["root"], dry, pending)
        result["changed"] = result["changed"] or bool(result["control_plane"])
    if module._diff:
        result["diff"] = [diff for _path, _spec, diff in todo]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
