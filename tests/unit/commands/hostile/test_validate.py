"""Hostile and careless input to `sparkfab validate`: the cases (the table's parts: table.py; how
each runs: runner.py)."""

from __future__ import annotations

import pytest
import yaml

from tests.unit.commands.hostile.runner import params, run
from tests.unit.commands.hostile.table import (
    EXE,
    FIFO,
    GROUP,
    INI,
    PAIR,
    _seven,
    bomb,
    c,
    glm,
    host,
    ini,
    inv,
    pair_host,
    pair_inst,
    pair_sf,
    renamed,
    setter,
    sf,
    sfset,
    validate,
)

CASES = [
    # the file itself
    validate("not-utf8", b"all:\n  hosts:\n    a: {}\n\xff\xfe\xfa" + b"x" * 5000, r"inv\.yml:4: .*not UTF-8"),
    validate("nul-byte", "all:\n  hosts: {}\x00\n", r"NUL"),
    validate("empty", "", r"no 'all' group"),
    validate("only-comment", "# nothing\n", r"no 'all' group"),
    validate("scalar", "hello\n", r"no 'all' group"),
    validate("all-list", "all: [1, 2]\n", r"no 'all' group"),
    validate("vars-list", "all:\n  hosts: {}\n  vars: [sparkfab]\n", r"all\.vars: must be a mapping"),
    validate("hosts-list", "all:\n  hosts: [a, b]\n  vars: {sparkfab: {cluster: x}}\n", r"all\.hosts: must be a"),
    validate("sparkfab-list", "all:\n  hosts: {}\n  vars: {sparkfab: [1]}\n", r"all\.vars\.sparkfab"),
    validate("sparkfab-string", "all:\n  vars: {sparkfab: ring}\n", r"all\.vars\.sparkfab"),
    validate("alias-bomb", bomb(), r"expands to more than .* values"),
    validate("alias-cycle", "all: &a\n  vars:\n    x: *a\n", r"(cycle|recursive)"),
    validate("deep-nesting", "all: " + "[" * 5000 + "]" * 5000 + "\n", r"(depth|nesting)"),
    validate("too-large", "# " + "x" * (9 * 1024 * 1024) + "\n", r"larger than 8 MiB"),
    validate("tab-indent", "all:\n\thosts: {}\n", r"not valid YAML"),
    validate("duplicate-key", "all:\n  hosts: {}\n  hosts: {}\n", r"inv\.yml:3: .*duplicate key 'hosts'"),
    validate("unclosed-flow", "all: {hosts: [a\n", r"not valid YAML"),
    validate("python-tag", "all: !!python/object/apply:os.system [id]\n", r"python/object"),
    validate("custom-tag-map", "all: !foo {hosts: {}}\n", r"tag !foo"),
    validate("bad-timestamp", "all:\n  x: !!timestamp nope\n", r"timestamp"),
    validate("merge-not-map", "all:\n  <<: 5\n", r"merges mappings only"),
    validate("key-is-a-list", "all:\n  ? [a, b]\n  : 1\n", r"mapping key must be a plain value"),
    validate(
        "vault-in-sparkfab",
        inv().replace("cluster: hostile4", "cluster: !vault |\n        $ANSIBLE_VAULT;1.1"),
        r"!vault",
    ),
    validate("unsafe-env", inv().replace("HF_HOME: /models", "HF_HOME: !unsafe '{{ x }}'"), r"env.*!unsafe"),
    validate("missing-sparkfab", "all:\n  hosts: {a: {}}\n  vars: {x: 1}\n", r"no 'sparkfab' block"),
    validate("many-unknown-keys", inv(lambda d: sf(d).update({f"k{i}": i for i in range(300)})), r"and \d+ more"),
    # every problem at once, a bad cluster name among them
    validate(
        "bad-cluster-and-more",
        inv(
            lambda d: (
                sf(d).update(cluster="Bad Name!", mtu=99999, master_port=80, link_speed=7, subnet_pool="127.0.0.0/8"),
                glm(d).update(head="spark-nope", port=29501),
            )
        ),
        r"7 problem\(s\)(.|\n)*cluster(.|\n)*head 'spark-nope'(.|\n)*API port 29501",
    ),
    validate("cluster-missing", inv(lambda d: sf(d).pop("cluster")), r"cluster.*required"),
    validate("cluster-number", inv(sfset("cluster", 12345678901234567890123)), r"cluster"),
    # host names and management addresses
    validate("host-named-inventory", renamed("inventory.yml"), r"'inventory\.yml' is reserved"),
    validate("host-named-bundles", renamed("bundles"), r"'bundles' is reserved"),
    validate("host-named-host-vars", renamed("host_vars"), r"'host_vars' is reserved"),
    validate("host-named-localhost", renamed("localhost"), r"'localhost' is reserved"),
    validate("host-with-slash", renamed("a/../../b"), r"a/\.\./\.\./b"),
    validate("host-with-space", renamed("spark c049"), r"spark c049"),
    validate("host-dotdot", renamed(".."), r"'\.\.'"),
    validate("host-entry-list", inv(setter("all", "hosts", "spark-329f", value=[1])), r"spark-329f"),
    validate("host-entry-string", inv(setter("all", "hosts", "spark-329f", value="x")), r"spark-329f"),
    validate(
        "ansible-host-injection",
        inv(setter("all", "hosts", "spark-329f", "ansible_host", value="10.0.0.1; rm -rf /")),
        r"ansible_host.*10\.0\.0\.1; rm",
    ),
    validate(
        "ansible-host-subshell",
        inv(setter("all", "hosts", "spark-329f", "ansible_host", value="$(id)")),
        r"ansible_host",
    ),
    validate(
        "ansible-host-newline",
        inv(setter("all", "hosts", "spark-329f", "ansible_host", value="a\nMASTER_ADDR=x")),
        r"ansible_host",
    ),
    validate(
        "ansible-host-empty", inv(setter("all", "hosts", "spark-329f", "ansible_host", value="")), r"ansible_host"
    ),
    validate(
        "ansible-host-list", inv(setter("all", "hosts", "spark-329f", "ansible_host", value=[1])), r"ansible_host"
    ),
    validate("mgmt-if-injection", inv(setter("all", "hosts", "spark-329f", "mgmt_if", value="eth0;id")), r"mgmt_if"),
    validate("rank-negative", inv(setter("all", "hosts", "spark-329f", "rank", value=-1)), r"rank"),
    validate("rank-string", inv(setter("all", "hosts", "spark-329f", "rank", value="zero")), r"rank"),
    validate(
        "two-rank-zero",
        inv(lambda d: (host(d).update(rank=0), host(d, "spark-355d").update(rank=0))),
        r"rank 0 is also given to",
    ),
    validate("rank-beyond", inv(setter("all", "hosts", "spark-329f", "rank", value=9)), r"rank 9 is beyond"),
    # environment and flags that reach shell files and the engine
    validate(
        "env-key-space",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A B": "1"})),
        r"env.*A B",
    ),
    validate(
        "env-key-digit", inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"1X": "1"})), r"1X"
    ),
    validate(
        "env-key-dollar",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"$(id)": "1"})),
        r"\$\(id\)",
    ),
    validate(
        "env-key-equals", inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A=B": "1"})), r"A=B"
    ),
    validate(
        "env-value-newline",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A": "1\nB=2"})),
        r"env\.A",
    ),
    validate(
        "env-value-cr",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A": "1\rB"})),
        r"env\.A",
    ),
    validate(
        "env-value-list", inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A": [1]})), r"env\.A"
    ),
    validate(
        "env-value-huge",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A": "x" * 5000})),
        r"env\.A",
    ),
    validate("env-list", inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value=["A=1"])), r"env"),
    validate(
        "flag-unknown",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"totally-bogus-flag": 7})),
        r"totally-bogus-flag",
    ),
    validate(
        "flag-typo",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"max-model-lenn": 7})),
        r"did you mean 'max-model-len'",
    ),
    validate(
        "flag-dashes",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"--port": 7})),
        r"--port",
    ),
    validate(
        "flag-space", inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"a b": 7})), r"a b"
    ),
    validate(
        "flag-value-newline",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"max-model-len": "1\n2"})),
        r"max-model-len",
    ),
    validate(
        "flag-generated",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"tensor-parallel-size": 2})),
        r"tensor-parallel-size.*generated",
    ),
    validate(
        "flag-headless",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"headless": True})),
        r"headless",
    ),
    validate(
        "flag-nan",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value={"max-num-seqs": float("nan")})),
        r"max-num-seqs",
    ),
    validate(
        "flags-list", inv(setter("all", "vars", "sparkfab", "instances", "glm", "flags", value=["--x"])), r"flags"
    ),
    # ports and addresses
    validate("master-port-top", inv(sfset("master_port", 65535)), r"master_port"),
    validate("master-port-zero", inv(sfset("master_port", 0)), r"master_port"),
    validate("master-port-ssh", inv(sfset("master_port", 22)), r"master_port"),
    validate("master-port-string", inv(sfset("master_port", "http")), r"master_port"),
    validate("master-port-float", inv(sfset("master_port", 29501.5)), r"master_port"),
    validate("master-port-bool", inv(sfset("master_port", True)), r"master_port"),
    validate("api-port-22", inv(setter("all", "vars", "sparkfab", "instances", "glm", "port", value=22)), r"port"),
    validate("api-port-big", inv(setter("all", "vars", "sparkfab", "instances", "glm", "port", value=70000)), r"port"),
    validate(
        "api-port-is-master",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "port", value=29501)),
        r"API port 29501 is taken by master_port",
    ),
    validate(
        "api-port-is-collective",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "port", value=29502)),
        r"taken by master_port \+ 1",
    ),
    validate("pool-everything", inv(sfset("subnet_pool", "0.0.0.0/0")), r"subnet_pool.*not a private range"),
    validate("pool-loopback", inv(sfset("subnet_pool", "127.0.0.0/8")), r"subnet_pool.*127\.0\.0\.0/8"),
    validate("pool-link-local", inv(sfset("subnet_pool", "169.254.0.0/16")), r"subnet_pool"),
    validate("pool-multicast", inv(sfset("subnet_pool", "224.0.0.0/8")), r"subnet_pool"),
    validate("pool-public", inv(sfset("subnet_pool", "8.8.0.0/16")), r"subnet_pool"),
    validate("pool-host-bits", inv(sfset("subnet_pool", "192.168.96.1/20")), r"subnet_pool"),
    validate("pool-word", inv(sfset("subnet_pool", "banana")), r"subnet_pool"),
    validate("pool-ipv6", inv(sfset("subnet_pool", "fd00::/64")), r"subnet_pool"),
    validate(
        "cable-subnet-loopback",
        inv(lambda d: sf(d)["cables"][0].update(subnets=["127.0.0.0/24", "127.0.1.0/24"])),
        r"cables\[0\]\.subnets",
    ),
    validate("rail-prefix-31", inv(sfset("rail_prefix", 31)), r"rail_prefix"),
    validate("mtu-huge", inv(sfset("mtu", 10**12)), r"mtu"),
    validate("mtu-text", inv(sfset("mtu", "jumbo")), r"mtu"),
    validate("link-speed-400", inv(sfset("link_speed", 400)), r"link_speed"),
    validate("channels-zero", inv(sfset("nccl_channels", 0)), r"nccl_channels"),
    validate("nccl-version-short", inv(sfset("nccl_version", "2.30")), r"nccl_version"),
    validate("renderer-bogus", inv(sfset("netplan_renderer", "systemd")), r"netplan_renderer"),
    validate("control-plane-bogus", inv(sfset("control_plane", "magic")), r"control_plane"),
    # instances and cables
    validate("tp-zero", inv(setter("all", "vars", "sparkfab", "instances", "glm", "tp", value=0)), r"tp"),
    validate("tp-huge", inv(setter("all", "vars", "sparkfab", "instances", "glm", "tp", value=10**6)), r"tp"),
    validate("tp-missing", inv(lambda d: glm(d).pop("tp")), r"tp.*required"),
    validate(
        "head-not-member",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "head", value="spark-nope")),
        r"head 'spark-nope' is not one of",
    ),
    validate(
        "launcher-unknown",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "launcher", value="no-such-recipe")),
        r"no-such-recipe",
    ),
    validate(
        "launcher-path",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "launcher", value="../../etc/passwd")),
        r"\.\./\.\./etc/passwd",
    ),
    validate(
        "instance-hosts-empty", inv(setter("all", "vars", "sparkfab", "instances", "glm", "hosts", value=[])), r"hosts"
    ),
    validate(
        "instance-host-twice",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "hosts", value=["spark-329f", "spark-329f"])),
        r"twice",
    ),
    validate("instance-list", inv(sfset("instances", ["glm"])), r"instances"),
    validate("cables-mapping", inv(sfset("cables", {"a": 1})), r"cables"),
    validate(
        "cable-three-ends",
        inv(lambda d: sf(d)["cables"][0].update(ends=["spark-329f:p1", "spark-355d:p1", "spark-c049:p1"])),
        r"two ends",
    ),
    validate("cable-string", inv(lambda d: sf(d)["cables"].append("spark-329f:p0")), r"cables\[4\]"),
    validate(
        "cable-end-space",
        inv(lambda d: sf(d)["cables"][0].update(ends=["spark-329f :p1", "spark-355d:p1"])),
        r"spark-329f :p1",
    ),
    validate(
        "cable-unknown-host",
        inv(lambda d: sf(d)["cables"][0].update(ends=["spark-zzzz:p1", "spark-355d:p1"])),
        r"spark-zzzz",
    ),
    validate(
        "switch-named-like-host",
        inv(sfset("switches", {"spark-329f": {"model": "CRS804"}})),
        r"switch 'spark-329f' has the name of a host",
    ),
    validate("switch-model-bogus", inv(sfset("switches", {"sw1": {"model": "CRS999"}})), r"model"),
    validate("switch-ports-huge", inv(sfset("switches", {"sw1": {"model": "generic", "ports": 10**9}})), r"ports"),
    validate(
        "ssh-user-injection",
        inv(setter("all", "hosts", "spark-329f", "ansible_user", value="root\n  ProxyCommand touch /tmp/x")),
        r"spark-329f\.ansible_user: has a line break",
    ),
    validate("ssh-user-space", inv(setter("all", "hosts", "spark-329f", "ansible_user", value="a b")), r"ansible_user"),
    validate(
        "ssh-port-text", inv(setter("all", "hosts", "spark-329f", "ansible_port", value="22 -oX")), r"ansible_port"
    ),
    validate("ssh-port-big", inv(setter("all", "vars", "ansible_port", value=70000)), r"all\.vars\.ansible_port"),
    validate(
        "ssh-key-newline",
        inv(setter("all", "hosts", "spark-329f", "ansible_ssh_private_key_file", value="/k\nProxyCommand x")),
        r"ansible_ssh_private_key_file: has a line break",
    ),
    c("validate-missing-file", "validate {d}/nope.yml", 5, r"nope\.yml: no such file"),
    c("validate-directory", "validate {d}", 2, r"is a directory without inventory files"),
    c(
        "ini-unreadable",
        "validate {d}/hosts.ini",
        2,
        r"Ansible cannot read it",
        files={"hosts.ini": "[sparks\nspark-a\n"},
    ),
    c(
        "split-block-differs",
        "validate {d}/hosts.ini",
        2,
        r"all\.vars\.sparkfab: differs between hosts \(e\.g\. on b\)",
        files={
            "hosts.ini": "a\nb\n[all:vars]\nsparkfab={'cluster': 'x'}\n",
            "host_vars/b.yml": "sparkfab: {cluster: y}\n",
        },
    ),
    # J1: an IPv6 scope is an interface name, not a line of an env file, ssh_config or shell
    validate("v6-scope-newline", pair_host("fe80::1%x\nSPARKFAB_INJECTED=1"), r"ansible_host.*scope"),
    validate("v6-scope-proxycommand", pair_host("fe80::1%h\n  ProxyCommand touch P"), r"ansible_host.*scope"),
    validate("v6-scope-subshell", pair_host("fe80::1%$(touch P)"), r"ansible_host.*scope is an interface name"),
    validate("v6-scope-backtick", pair_host("fe80::1%`id`"), r"ansible_host.*scope"),
    validate("v6-scope-ok", pair_host("fe80::1%enP7s7"), r"valid", code=0),
    validate("fqdn-final-dot", pair_host("spark-a.example.com."), r"valid", code=0),
    validate("rank-true", pair_host(True, "rank"), r"rank.*not a whole number"),
    validate("tp-true", inv(lambda d: glm(d).update(tp=True)), r"tp.*not a whole number"),
    # a subnet is text: Python's network type reads true as 0.0.0.1/32 and a number as an address
    validate("pool-true", inv(lambda d: sf(d).update(subnet_pool=True)), r"subnet_pool: true is not a subnet"),
    validate("pool-int", inv(lambda d: sf(d).update(subnet_pool=3232235520)), r"subnet_pool: 3232235520 is not a"),
    validate("pool-pair", inv(lambda d: sf(d).update(subnet_pool=[3232235520, 16])), r"subnet_pool.*not a subnet"),
    validate(
        "switch-ports-true",
        inv(lambda d: sf(d).update(switches={"sw": {"model": "generic", "ports": True}})),
        r"ports.*not a whole number",
    ),
    validate("port-superscript", pair_host("\u00b2\u00b2", "ansible_port"), r"ansible_port"),
    ini(
        "ini-host-vars-v6-inject",
        r"ansible_host.*scope",
        **{"host_vars__spark-a.yml": yaml.safe_dump({"ansible_host": "fe80::1%x\nSPARKFAB_INJECTED=1"})},
    ),
    ini(
        "ini-port-superscript",
        r"ansible_port",
        **{"hosts.ini": INI.replace("10.0.0.21", "10.0.0.21 ansible_port=\u00b2\u00b2")},
    ),
    # one reader: a FIFO, a device or an executable is never opened or run
    validate("inventory-fifo", FIFO, r"not a regular file"),
    ini(
        "ini-group-vars-fifo",
        r"group_vars/all\.yml: is not a regular file",
        group_vars__all_yml=b"",
        **{"group_vars__all.yml": FIFO},
    ),
    ini("ini-host-vars-fifo", r"host_vars/spark-a: is not a regular file", **{"host_vars__spark-a": FIFO}),
    ini(
        "ini-group-vars-bomb",
        r"group_vars/x\.yml.*expands to more than",
        **{"group_vars__x.yml": bomb().split("    sparkfab")[0]},
    ),
    ini(
        "ini-group-vars-huge",
        r"group_vars/big\.yml: is larger than 8 MiB",
        **{"group_vars__big.yml": "#" + "x" * (9 << 20)},
    ),
    c(
        "inventory-dir-script",
        "validate {d}",
        2,
        r"zz-dyn\.py: is executable",
        files={"hosts.ini": INI, "group_vars/all.yml": GROUP, "zz-dyn.py": EXE},
    ),
    c("script-inventory", "validate {d}/inv.sh", 2, r"inv\.sh: is executable", files={"inv.sh": EXE}),
    validate("cluster-terminal-escape", inv(sfset("cluster", "\x1b]0;owned\x07\x1b[2J")), r"\\x1b\]0;owned\\x07"),
    # a value that ends in a line break is not the value: `$` in a pattern matched before it
    validate("ansible-host-trailing-newline", pair_host("10.0.0.21\n"), r"ansible_host"),
    validate("ansible-host-unspecified", pair_host("0.0.0.0"), r"not the address of one host"),
    validate("ansible-host-v6-unspecified", pair_host("::"), r"not the address of one host"),
    validate("ansible-host-broadcast", pair_host("255.255.255.255"), r"not the address of one host"),
    validate("ansible-host-multicast", pair_host("224.0.0.1"), r"not the address of one host"),
    validate("ansible-ssh-port-alias", pair_host("x22", "ansible_ssh_port"), r"ansible_ssh_port.*\n.*SSH port"),
    validate("ansible-ssh-user-alias", pair_host("a b", "ansible_ssh_user"), r"ansible_ssh_user"),
    validate("pool-holds-management", pair_sf("subnet_pool", "10.0.0.0/23"), r"10\.0\.0\.2[12] is inside rail"),
    validate("pool-too-small-whole", pair_sf("subnet_pool", "192.168.1.0/26"), r"holds 0 /24 rails"),
    validate("cluster-trailing-newline", pair_sf("cluster", "pair\n"), r"cluster"),
    # every problem at once, in the user's words
    validate("key-with-bracket", pair_sf("mtu[1]", 1500), r"sparkfab\.mtu\[1\]: unknown key 'mtu\[1\]'"),
    validate(
        "flag-value-list", pair_inst(flags={"max-model-len": [1, 2]}), r"max-model-len: a list is none of the forms"
    ),
    validate("seven-problems", yaml.safe_dump(_seven()), r"7 problem\(s\)"),
    validate("host-named-no", yaml.safe_dump(PAIR).replace("spark-b", "no"), r"a host named False: YAML read"),
    validate("host-named-float", yaml.safe_dump(PAIR).replace("spark-b", "1.10"), r"a host named 1\.1: YAML"),
    ini("ini-host-nul", r"all\.hosts\.x\\x00y: 'x\\x00y' is not a valid host name", **{"hosts.ini": INI + "x\x00y\n"}),
    # a user's own variable is not copied for every host: 300 hosts and a 4 MB group variable
    ini(
        "ini-300-hosts-big-group-var",
        r"valid",
        code=0,
        **{
            "hosts.ini": INI + "".join(f"h{i} ansible_host=10.1.{i // 250}.{i % 250 + 1}\n" for i in range(300)),
            "group_vars/all.yml": GROUP + "big: " + "y" * (4 << 20) + "\n",
        },
    ),
]


@pytest.mark.parametrize("case", params(CASES), ids=lambda k: k.id)
def test_hostile_input(case, tmp_path, capsys, monkeypatch, server):
    run(case, tmp_path, capsys, monkeypatch, server)
