"""Hostile and careless input, table-driven.

Every case runs one verb in-process and asserts: the exit code the README promises (2 bad
input or usage, 5 a missing file or a misbehaving server, never 1), a message on stderr that
names the culprit, no line longer than the CLI's limit, a time bound, and that nothing in the
case's directory changed except the outputs the case allows (checksums of the whole tree).
Servers are local doubles on 127.0.0.1 that misbehave on purpose.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import json
import os
import re
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.bench import run_dir_files

RING = yaml.safe_load((REPO / "inventory/ring4.yml").read_text())
RING["all"]["vars"]["sparkfab"]["instances"]["glm"]["env"] = {"HF_HOME": "/models"}
# a cluster name no lab runs under: the cases that say "not up" must never reach a lab that is
# (a `lab wire --cut` or `reset --lab` of a lab test's ring4 running at the same time)
RING["all"]["vars"]["sparkfab"]["cluster"] = "hostile4"
SWITCH100 = (REPO / "inventory/switch16-crs804-100.yml").read_text()


def inv(change: Callable[[dict[str, Any]], Any] | None = None) -> str:
    """The ring4 example, changed by `change` (which edits the dict in place)."""
    data = copy.deepcopy(RING)
    if change is not None:
        change(data)
    return yaml.safe_dump(data, sort_keys=False)


def sf(data: dict[str, Any]) -> dict[str, Any]:
    return data["all"]["vars"]["sparkfab"]


def glm(data: dict[str, Any]) -> dict[str, Any]:
    return sf(data)["instances"]["glm"]


def host(data: dict[str, Any], name: str = "spark-329f") -> dict[str, Any]:
    return data["all"]["hosts"][name]


def setter(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        node = data
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value

    return change


def sfset(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return setter("all", "vars", "sparkfab", key, value=value)


def bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "all:\n  vars:\n    x:\n" + "".join(f"      {line}\n" for line in lines) + "    sparkfab: {cluster: x}\n"


def sample_file(records: int = 50, counters: int = 2, step_ns: int = 1_000_000) -> bytes:
    """A sample file as `sparkfab sample` writes it: header, then fixed records."""
    header = {
        "version": 1,
        "interval_s": 0.001,
        "counters": [
            {"path": f"/c{i}", "device": "rocep1s0f0", "direction": "tx" if i % 2 == 0 else "rx", "unit": 4}
            for i in range(counters)
        ],
        "anchor": {"wall_ns": 0, "mono_ns": 0},
    }
    blob = json.dumps(header).encode()
    rec = struct.Struct("<qqII" + "Q" * counters)
    body = b"".join(
        rec.pack(step_ns * k, step_ns * k + 1000, 0, 0, *[k * 31_250 for _ in range(counters)]) for k in range(records)
    )
    return b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", len(blob)) + blob + body


GOOD_ROW = json.loads(run_dir_files()["run/requests.jsonl"])


def row(**kw: Any) -> str:
    return json.dumps({**GOOD_ROW, **kw})


CONFIG = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}


def config(**kw: Any) -> str:
    return json.dumps({**CONFIG, **kw})


# ------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # {d}: the case directory, {url}: the case's server
    code: int
    culprit: str  # a regular expression the message must contain
    files: dict[str, str | bytes] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()  # paths under {d} that may change
    server: str | None = None  # a misbehaving server, see SERVERS
    seconds: float = 10.0
    slow: bool = False  # waits out a bound of its own (the slow tier, not the default run)
    env: dict[str, str] = field(default_factory=dict)  # variables the case sets


def c(id: str, argv: str, code: int, culprit: str, **kw: Any) -> Case:
    return Case(id, tuple(argv.split()) if isinstance(argv, str) else argv, code, culprit, **kw)


def validate(id: str, text: str | bytes, culprit: str, code: int = 2, verb: str = "validate {inv}") -> Case:
    return c(id, verb.replace("{inv}", "{d}/inv.yml"), code, culprit, files={"inv.yml": text})


def renamed(new: str) -> str:
    """The ring with spark-c049 renamed everywhere (YAML quotes what needs quoting)."""
    return inv(lambda d: d.update(json.loads(json.dumps(d).replace("spark-c049", new.replace('"', '\\"')))))


INVENTORY_CASES = [
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
    # the same loader behind every verb that reads an inventory
    validate("plan-alias-bomb", bomb(), r"expands to more than", verb="plan {inv}"),
    validate("plan-non-utf8", b"\xff\xff", r"not UTF-8", verb="plan {inv}"),
    validate("plan-vars-list", "all:\n  vars: [1]\n", r"all\.vars", verb="plan {inv}"),
    validate("lab-up-dry-run-bad", inv(sfset("master_port", 65535)), r"master_port", verb="lab up {inv} --dry-run"),
    validate("verify-bad-inventory", inv(sfset("subnet_pool", "0.0.0.0/0")), r"subnet_pool", verb="verify {inv}"),
    validate(
        "apply-bad-inventory",
        inv(setter("all", "hosts", "spark-329f", "ansible_host", value="$(id)")),
        r"ansible_host",
        verb="apply {inv} -y",
    ),
    validate(
        "serve-bad-inventory",
        inv(setter("all", "vars", "sparkfab", "instances", "glm", "env", value={"A B": "1"})),
        r"A B",
        verb="serve start {inv} -y",
    ),
    validate("linkspeed-bad-inventory", bomb(), r"expands to more than", verb="linkspeed {inv} 100e -y"),
    validate(
        "render-bad-inventory",
        inv(setter("all", "hosts", "spark-329f", "ansible_host", value="a b")),
        r"ansible_host",
        verb="render {inv} -o {d}/out",
    ),
    validate("estimate-bad-inventory", b"\xfe", r"not UTF-8", verb="estimate --inventory {inv}"),
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
    validate("linkspeed-200-on-100-switch", SWITCH100, r"carries", verb="linkspeed {inv} 200 -y"),
    c("validate-missing-file", "validate {d}/nope.yml", 5, r"nope\.yml: no such file"),
    c("validate-directory", "validate {d}", 2, r"is a directory without inventory files"),
    c("plan-missing-file", "plan {d}/nope.yml", 5, r"nope\.yml"),
    c("plan-bad-format", "plan {d}/nope.yml --format xml", 2, r"invalid choice: 'xml'"),
    c("verify-lab-not-up", "verify --lab {d}/inv.yml", 2, r"lab hostile4 is not up", files={"inv.yml": inv()}),
    c("preflight-lab-not-up", "preflight --lab {d}/inv.yml", 2, r"lab hostile4 is not up", files={"inv.yml": inv()}),
    c("reset-lab-not-up", "reset --lab {d}/inv.yml", 2, r"lab hostile4 is not up", files={"inv.yml": inv()}),
    # real hosts are never changed without a yes (and never reached here: no -y is given)
    c(
        "reset-real-hosts-unconfirmed",
        "reset {d}/inv.yml",
        2,
        r"reset changes real hosts .*pass -y",
        files={"inv.yml": inv()},
    ),
    c(
        "discover-merge-into-ini",
        "discover --inventory {d}/hosts.ini",
        2,
        r"discover merges the cables into a single-file inventory",
        files={"hosts.ini": "a ansible_host=10.0.0.1\n[all:vars]\nsparkfab={'cluster': 'x'}\n"},
    ),
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
    c(
        "lab-wire-not-up",
        "lab wire {d}/inv.yml --cut cables[0]",
        2,
        r"lab hostile4 is not up",
        files={"inv.yml": inv()},
    ),
]


def render(id: str, argv: str, code: int, culprit: str, files: dict[str, str | bytes] | None = None, **kw: Any) -> Case:
    return c(id, argv, code, culprit, files={"inv.yml": inv(), **(files or {})}, **kw)


RENDER_CASES = [
    render("render-into-inventory-dir", "render {d}/inv.yml -o {d}", 2, r"holds the input"),
    render(
        "render-into-parent-of-inventory",
        "render {d}/cfg/inv.yml -o {d}",
        2,
        r"holds the input",
        files={"cfg/inv.yml": inv()},
    ),
    render(
        "render-into-foreign-dir",
        "render {d}/inv.yml -o {d}/out",
        2,
        r"did not write \(inventory\.yml\)",
        files={"out/inventory.yml": "mine\n"},
    ),
    render(
        "render-into-host-vars",
        "render {d}/inv.yml -o {d}/out",
        2,
        r"host_vars/a\.yml",
        files={"out/host_vars/a.yml": "x\n"},
    ),
    render("render-tmp-files", "render {d}/inv.yml -o {d}/out", 2, r"x\.tmp", files={"out/x.tmp": "x\n"}),
    render("render-empty-o", ("render", "{d}/inv.yml", "-o", ""), 2, r"-o.*empty"),
    render("render-o-file", "render {d}/inv.yml -o {d}/f", 2, r"exists and is not a directory", files={"f": "x"}),
    render("render-o-under-file", "render {d}/inv.yml -o {d}/f/sub", 5, r"f/sub", files={"f": "x"}),
    render("render-o-proc", "render {d}/inv.yml -o /proc/sparkfab-test", 5, r"/proc/sparkfab-test"),
    render(
        "render-link-speed-200-on-100-switch",
        "render {d}/s.yml -o {d}/out --link-speed 200",
        2,
        r"carries",
        files={"s.yml": SWITCH100},
    ),
    render("render-link-speed-bogus", "render {d}/inv.yml -o {d}/out --link-speed 400", 2, r"invalid choice"),
    render("render-new-dir", "render {d}/inv.yml -o {d}/out", 0, r"rendered \d+ files", outputs=("out",)),
    render("render-nested-new", "render {d}/inv.yml -o {d}/a/b/c", 0, r"rendered", outputs=("a",)),
    c(
        "schema-over-inventory",
        "schema -o {d}/inv.yml",
        2,
        r"inv\.yml exists and sparkfab did not write it",
        files={"inv.yml": inv()},
    ),
    c("schema-into-dir", "schema -o {d}", 2, r"is a directory"),
    c("schema-empty", ("schema", "-o", ""), 2, r"-o.*empty"),
    c("schema-new", "schema -o {d}/s.json", 0, r"", outputs=("s.json",)),
]


ESTIMATE_CASES = [
    c("estimate-tp-0", "estimate --tp 0", 2, r"--tp"),
    c("estimate-tp-negative", "estimate --tp -3", 2, r"--tp"),
    c("estimate-tp-huge", "estimate --tp 100000", 2, r"--tp"),
    c("estimate-chunk-0", "estimate --chunk 0", 2, r"--chunk"),
    c("estimate-from-nan", "estimate --from nan", 2, r"--from"),
    c("estimate-from-negative", "estimate --from -200", 2, r"--from"),
    c("estimate-to-zero", "estimate --to 0", 2, r"--to"),
    c("estimate-to-inf", "estimate --to inf", 2, r"--to"),
    c("estimate-to-faster", "estimate --from 100 --to 200", 2, r"--to"),
    c("estimate-ttft-nan", "estimate --ttft nan", 2, r"--ttft"),
    c("estimate-ttft-negative", "estimate --ttft -1", 2, r"--ttft"),
    c("estimate-ttft-prompt-0", "estimate --ttft 1 --ttft-prompt 0", 2, r"--ttft-prompt"),
    c("estimate-active-negative", "estimate --active-params -1", 2, r"--active-params"),
    c("estimate-bits-zero", "estimate --bits-per-weight 0", 2, r"--bits-per-weight"),
    c("estimate-mtp-negative", "estimate --mtp-tokens -2", 2, r"--mtp-tokens"),
    c("estimate-lab-no-inventory", "estimate --lab", 2, r"--lab needs --inventory"),
    c(
        "serve-unknown-instance",
        "serve start {d}/i.yml --instance nope",
        2,
        r"--instance nope: sw16 has the instance\(s\) glm-a, glm-b",
        files={"i.yml": (REPO / "inventory/switch16-crs804-100.yml").read_text()},
    ),
    c(
        "estimate-lab-not-up",
        "estimate --lab --inventory {d}/i.yml",
        2,
        r"no lab model at .*lab up",
        files={"i.yml": (REPO / "inventory/pair-2cables.yml").read_text()},
    ),
    c("estimate-plan-unknown", "estimate --plan L7", 2, r"unknown test\(s\) L7"),
    c("estimate-tp-word", "estimate --tp eight", 2, r"--tp"),
    c("estimate-model-unknown", "estimate --model glm-9000", 2, r"glm-9000"),
    c("estimate-config-missing", "estimate --config {d}/nope.json", 5, r"nope\.json"),
    c("estimate-config-dir", "estimate --config {d}", 2, r"is a directory"),
    c("estimate-config-not-json", "estimate --config {d}/c.json", 2, r"c\.json: not JSON", files={"c.json": "{nope"}),
    c("estimate-config-list", "estimate --config {d}/c.json", 2, r"c\.json.*object", files={"c.json": "[1, 2]"}),
    c(
        "estimate-config-binary",
        "estimate --config {d}/c.json",
        2,
        r"c\.json.*UTF-8",
        files={"c.json": b"\xff\xd8\xff"},
    ),
    c(
        "estimate-config-hidden-zero",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size=0)},
    ),
    c(
        "estimate-config-hidden-negative",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size=-4096)},
    ),
    c(
        "estimate-config-hidden-bool",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size=True)},
    ),
    c(
        "estimate-config-hidden-string",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": config(hidden_size="4096")},
    ),
    c(
        "estimate-config-layers-huge",
        "estimate --config {d}/c.json",
        2,
        r"num_hidden_layers",
        files={"c.json": config(num_hidden_layers=10**30)},
    ),
    c(
        "estimate-config-heads-zero",
        "estimate --config {d}/c.json",
        2,
        r"num_attention_heads",
        files={"c.json": config(num_attention_heads=0)},
    ),
    c(
        "estimate-config-text-config-list",
        "estimate --config {d}/c.json",
        2,
        r"hidden_size",
        files={"c.json": json.dumps({"text_config": [1]})},
    ),
    c(
        "estimate-config-vocab-string",
        "estimate --config {d}/c.json",
        2,
        r"vocab_size",
        files={"c.json": config(vocab_size="many")},
    ),
    c(
        "estimate-config-mtp-string",
        "estimate --config {d}/c.json",
        2,
        r"num_nextn_predict_layers",
        files={"c.json": config(num_nextn_predict_layers="x")},
    ),
    c(
        "estimate-config-nan",
        "estimate --config {d}/c.json",
        2,
        r"c\.json",
        files={"c.json": '{"hidden_size": NaN, "num_hidden_layers": 2, "num_attention_heads": 2}'},
    ),
    c(
        "estimate-config-huge-file",
        "estimate --config {d}/c.json",
        2,
        r"larger than",
        files={"c.json": " " * (9 * 1024 * 1024)},
    ),
    c("estimate-plot-into-file", "estimate --plot {d}/f", 2, r"exists and is not a directory", files={"f": "x"}),
    c(
        "estimate-plot-foreign-dir",
        "estimate --plot {d}/p",
        2,
        r"did not write \(mine\.png\)",
        files={"p/mine.png": "x"},
    ),
    c("estimate-inventory-missing", "estimate --inventory {d}/nope.yml", 5, r"nope\.yml"),
    c("estimate-plot-new", "estimate --plot {d}/p", 0, r"wrote", outputs=("p",), seconds=30),
]


def traffic(
    id: str,
    argv: str,
    code: int,
    culprit: str,
    data: bytes | None = None,
    files_extra: dict[str, bytes] | None = None,
    **kw: Any,
) -> Case:
    return c(
        id,
        f"traffic {{d}}/s.bin {argv}".strip(),
        code,
        culprit,
        files={"s.bin": data if data is not None else sample_file(), **(files_extra or {})},
        **kw,
    )


TRAFFIC_CASES = [
    c("traffic-missing", "traffic {d}/nope.bin", 5, r"nope\.bin"),
    c("traffic-directory", "traffic {d}", 2, r"is a directory"),
    traffic("traffic-garbage", "", 2, r"s\.bin: not a sparkfab sample file", data=os.urandom(4096)),
    traffic("traffic-empty-file", "", 2, r"s\.bin: not a sparkfab sample file", data=b""),
    traffic(
        "traffic-header-length-huge",
        "",
        2,
        r"s\.bin: .*header",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 2**31) + b"{}",
    ),
    traffic(
        "traffic-header-not-json",
        "",
        2,
        r"s\.bin: .*header",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 5) + b"{nope",
    ),
    traffic(
        "traffic-header-list", "", 2, r"s\.bin: .*header", data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 2) + b"[]"
    ),
    traffic(
        "traffic-header-no-counters",
        "",
        2,
        r"s\.bin: .*counters",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 2) + b"{}",
    ),
    traffic(
        "traffic-header-counters-bad",
        "",
        2,
        r"s\.bin: .*counters",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 17) + b'{"counters": [1]}',
    ),
    traffic(
        "traffic-no-records", "", 2, r"s\.bin: [01] sample\(s\): rates need at least two", data=sample_file(records=0)
    ),
    traffic(
        "traffic-one-record", "", 2, r"s\.bin: [01] sample\(s\): rates need at least two", data=sample_file(records=1)
    ),
    traffic("traffic-torn-record", "--format json", 0, r"", data=sample_file()[:-7]),
    traffic("traffic-intervals-zero", "--intervals 0", 2, r"--intervals"),
    traffic("traffic-intervals-tiny", "--intervals 1us", 2, r"--intervals"),
    traffic("traffic-intervals-negative", "--intervals=-5ms", 2, r"--intervals"),
    traffic("traffic-intervals-word", "--intervals fast", 2, r"--intervals.*fast"),
    traffic("traffic-intervals-empty", ("--intervals", ""), 2, r"--intervals"),
    traffic("traffic-intervals-nan", "--intervals nanms", 2, r"--intervals"),
    traffic("traffic-intervals-many", "--intervals " + ",".join(["1ms"] * 500), 2, r"--intervals"),
    traffic("traffic-window-reversed", "--window 5:1", 2, r"--window"),
    traffic("traffic-window-word", "--window a:b", 2, r"--window"),
    traffic("traffic-window-one", "--window 3", 2, r"--window"),
    traffic("traffic-window-nan", "--window nan:1", 2, r"--window"),
    traffic("traffic-plot-dir", "--plot {d}", 2, r"(is a directory|\.png)"),
    traffic("traffic-plot-not-png", "--plot {d}/x.txt", 2, r"\.png"),
    c(
        "traffic-plot-over-file",
        "traffic {d}/s.bin --plot {d}/x.png",
        2,
        r"x\.png exists and sparkfab did not write it",
        files={"s.bin": sample_file(), "x.png": "mine"},
    ),
    traffic("traffic-plot-over-input", "--plot {d}/s.bin", 2, r"(\.png|input)"),
    traffic("traffic-ok", "--format json", 0, r""),
]


def report(id: str, argv: str, code: int, culprit: str, files: dict[str, str | bytes] | None = None, **kw: Any) -> Case:
    return c(id, argv, code, culprit, files={**run_dir_files("a"), **run_dir_files("b"), **(files or {})}, **kw)


REPORT_CASES = [
    report("report-missing-run", "report {d}/nope -o {d}/out", 5, r"nope"),
    report("report-not-a-run", "report {d}/x -o {d}/out", 2, r"x: not a bench run directory", files={"x/file": "x"}),
    report(
        "report-run-json-garbage", "report {d}/r -o {d}/out", 2, r"r/run\.json", files=run_dir_files("r", meta="{nope")
    ),
    report("report-run-json-list", "report {d}/r -o {d}/out", 2, r"r/run\.json", files=run_dir_files("r", meta="[1]")),
    report(
        "report-run-json-binary",
        "report {d}/r -o {d}/out",
        2,
        r"r/run\.json",
        files={"r/run.json": b"\xff\xfe", "r/requests.jsonl": ""},
    ),
    report("report-three-runs", "report {d}/a {d}/b {d}/a -o {d}/out", 2, r"one or two runs"),
    report("report-into-run", "report {d}/a -o {d}/a", 2, r"holds the input"),
    report("report-into-parent", "report {d}/a -o {d}", 2, r"holds the input"),
    report(
        "report-into-foreign",
        "report {d}/a -o {d}/out",
        2,
        r"did not write \(notes\.txt\)",
        files={"out/notes.txt": "x"},
    ),
    report(
        "report-estimate-config-missing", "report {d}/a --estimate --config {d}/nope.json -o {d}/out", 5, r"nope\.json"
    ),
    report("report-tp-zero", "report {d}/a --estimate --tp 0 -o {d}/out", 2, r"--tp"),
    report("report-empty-o", ("report", "{d}/a", "-o", ""), 2, r"-o.*empty"),
    report(
        "report-torn-last-line",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable line",
        files=run_dir_files("r", rows=[row(), row(index=1)[:40]]),
        outputs=("out",),
        seconds=30,
    ),
    report(
        "report-garbage-lines",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 3 unreadable line",
        files=run_dir_files("r", rows=["nope", row(), "[1]", '{"test": 5}']),
        outputs=("out",),
        seconds=30,
    ),
    report(
        "report-row-types",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable line",
        files=run_dir_files("r", rows=[row(), row(ttft_s="fast")]),
        outputs=("out",),
        seconds=30,
    ),
    report(
        "report-no-rows",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files=run_dir_files("r", rows=[]),
        outputs=("out",),
        seconds=30,
    ),
]


def bench(id: str, argv: str, code: int, culprit: str, server: str | None = "good", **kw: Any) -> Case:
    base = "bench --url {url} --model fake-model --rounds 1 --warmup 0 --idle-seconds 0 --output-tokens 4 -o {d}/run"
    return c(id, f"{base} {argv}".strip(), code, culprit, server=server, **kw)


PLAN = "- {name: t, requests: 1, prompt_tokens: 20, output_tokens: 4}\n"

BENCH_CASES = [
    bench("bench-rounds-zero", "--rounds 0", 2, r"--rounds"),
    bench("bench-rounds-negative", "--rounds=-1", 2, r"--rounds"),
    bench("bench-warmup-negative", "--warmup=-1", 2, r"--warmup"),
    bench("bench-output-tokens-zero", "--output-tokens 0", 2, r"--output-tokens"),
    bench("bench-output-tokens-huge", "--output-tokens 100000000", 2, r"--output-tokens"),
    bench("bench-timeout-zero", "--timeout 0", 2, r"--timeout"),
    bench("bench-timeout-nan", "--timeout nan", 2, r"--timeout"),
    bench("bench-idle-negative", "--idle-seconds=-1", 2, r"--idle-seconds"),
    bench("bench-plan-unknown", "--plan P9", 2, r"P9"),
    bench("bench-plan-file-garbage", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": "{nope"}),
    bench("bench-plan-file-mapping", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": "a: 1\n"}),
    bench("bench-plan-no-name", "--plan {d}/p.yml", 2, r"p\.yml.*name", files={"p.yml": "- {prompt_tokens: 5}\n"}),
    bench(
        "bench-plan-absurd-prompt",
        "--plan {d}/p.yml",
        2,
        r"prompt_tokens",
        files={"p.yml": "- {name: x, prompt_tokens: 1000000000000}\n"},
    ),
    bench(
        "bench-plan-zero-prompt",
        "--plan {d}/p.yml",
        2,
        r"prompt_tokens",
        files={"p.yml": "- {name: x, prompt_tokens: 0}\n"},
    ),
    bench(
        "bench-plan-requests-huge",
        "--plan {d}/p.yml",
        2,
        r"requests",
        files={"p.yml": "- {name: x, prompt_tokens: 5, requests: 100000}\n"},
    ),
    bench(
        "bench-plan-string-tokens",
        "--plan {d}/p.yml",
        2,
        r"prompt_tokens",
        files={"p.yml": "- {name: x, prompt_tokens: many}\n"},
    ),
    bench("bench-plan-empty", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": "[]\n"}),
    bench("bench-plan-bomb", "--plan {d}/p.yml", 2, r"p\.yml", files={"p.yml": bomb()}),
    bench("bench-url-word", "--url nope", 2, r"--url", server=None),
    bench("bench-url-ftp", "--url ftp://127.0.0.1/", 2, r"--url", server=None),
    bench("bench-url-no-host", "--url http://", 2, r"--url", server=None),
    bench("bench-url-bad-port", "--url http://127.0.0.1:99999", 2, r"--url", server=None),
    bench(
        "bench-existing-run",
        "--plan {d}/p.yml",
        2,
        r"run.*(already|holds)",
        files={"p.yml": PLAN, "run/requests.jsonl": "{}\n"},
    ),
    bench("bench-run-is-file", "--plan {d}/p.yml", 2, r"run", files={"p.yml": PLAN, "run": "x"}),
    bench(
        "bench-counters-missing",
        "--plan {d}/p.yml --counters nosuchdev --source netdev --root {d}",
        2,
        r"nosuchdev",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-counters-traversal",
        "--plan {d}/p.yml --counters ../../etc --source netdev",
        2,
        r"\.\./\.\./etc",
        files={"p.yml": PLAN},
    ),
    bench("bench-closed-port", "--plan {d}/p.yml", 5, r"cannot reach", server="closed", files={"p.yml": PLAN}),
    bench("bench-lab-no-inventory", "--plan {d}/p.yml --lab", 2, r"--lab needs --inventory", files={"p.yml": PLAN}),
    bench(
        "bench-instance-no-inventory",
        "--plan {d}/p.yml --instance a",
        2,
        r"--instance needs --inventory",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-instance-unknown",
        "--plan {d}/p.yml --inventory {d}/i.yml --instance glm-c",
        2,
        r"--instance glm-c: sw16 has the instance\(s\) glm-a, glm-b",
        files={"p.yml": PLAN, "i.yml": (REPO / "inventory/switch16-crs804-100.yml").read_text()},
    ),
    bench("bench-link-speed-bogus", "--plan {d}/p.yml --link-speed 400", 2, r"--link-speed", files={"p.yml": PLAN}),
    bench(
        "bench-link-speed-and-inventory",
        "--plan {d}/p.yml --inventory {d}/i.yml --link-speed 100e",
        2,
        r"--link-speed: with --inventory the speed measured is the inventory's speed now",
        files={"p.yml": PLAN, "i.yml": (REPO / "inventory/pair-1cable.yml").read_text()},
    ),
    bench(
        "bench-counters-host-no-inventory",
        "--plan {d}/p.yml --counters-host spark-a",
        2,
        r"--counters-host takes the devices from --inventory",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-counters-host-unknown",
        "--plan {d}/p.yml --inventory {d}/i.yml --counters-host spark-z --source netdev",
        2,
        r"spark-z is not a host of .*i\.yml",
        files={"p.yml": PLAN, "i.yml": (REPO / "inventory/pair-1cable.yml").read_text()},
    ),
    bench(
        "bench-silent-server",
        "--plan {d}/p.yml --timeout 2",
        5,
        r"(no answer|timed out|Timeout)",
        server="silent",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-garbage-server",
        "--plan {d}/p.yml --timeout 3",
        5,
        r"(HTTP|protocol|answer)",
        server="garbage",
        files={"p.yml": PLAN},
    ),
    bench(
        "bench-bad-chunk",
        "--plan {d}/p.yml --rounds 3",
        5,
        r"1 of 3 requests failed",
        server="bad-chunk",
        files={"p.yml": PLAN},
        outputs=("run",),
        seconds=20,
    ),
    bench(
        "bench-stalled-stream",
        "--plan {d}/p.yml --rounds 2 --idle-timeout 1",
        5,
        r"of 2 requests failed",
        server="stall",
        files={"p.yml": PLAN},
        outputs=("run",),
        seconds=20,
    ),
    bench("bench-ok", "--plan {d}/p.yml", 0, r"results in", files={"p.yml": PLAN}, outputs=("run",), seconds=20),
]

BATTERY_CASES = [
    c("battery-closed", "battery --url {url} --model m --checks count", 5, r"cannot reach", server="closed"),
    c(
        "battery-silent",
        "battery --url {url} --model m --checks count --timeout 2",
        5,
        r"(no answer|timed out|Timeout)",
        server="silent",
    ),
    c(
        "battery-garbage",
        "battery --url {url} --model m --checks count --timeout 3",
        5,
        r"(HTTP|protocol|answer)",
        server="garbage",
    ),
    c("battery-checks-bogus", "battery --url http://127.0.0.1:9 --model m --checks count,bogus", 2, r"bogus"),
    c(
        "battery-context-negative",
        "battery --url http://127.0.0.1:9 --model m --context-chars=-5",
        2,
        r"--context-chars",
    ),
    c(
        "battery-context-huge",
        "battery --url http://127.0.0.1:9 --model m --context-chars 1000000000",
        2,
        r"--context-chars",
    ),
    c("battery-url-word", "battery --url nope --model m", 2, r"--url"),
    c("battery-timeout-zero", "battery --url http://127.0.0.1:9 --model m --timeout 0", 2, r"--timeout"),
]

SAMPLE_CASES = [
    c(
        "sample-interval-zero",
        "sample --devices lo --source netdev --interval 0 --duration 0.1 -o {d}/s.bin",
        2,
        r"--interval",
    ),
    c(
        "sample-interval-tiny",
        "sample --devices lo --source netdev --interval 1us --duration 0.1 -o {d}/s.bin",
        2,
        r"--interval",
    ),
    c(
        "sample-interval-word",
        "sample --devices lo --source netdev --interval fast --duration 0.1 -o {d}/s.bin",
        2,
        r"--interval",
    ),
    c("sample-duration-negative", "sample --devices lo --source netdev --duration=-1 -o {d}/s.bin", 2, r"--duration"),
    c("sample-duration-nan", "sample --devices lo --source netdev --duration nan -o {d}/s.bin", 2, r"--duration"),
    c(
        "sample-device-missing",
        "sample --devices nosuchdev0 --source netdev --duration 0.1 --root {d} -o {d}/s.bin",
        2,
        r"nosuchdev0",
    ),
    c("sample-device-traversal", "sample --devices ../../../etc --duration 0.1 -o {d}/s.bin", 2, r"\.\./\.\./\.\./etc"),
    c(
        "sample-over-existing",
        "sample --devices lo --source netdev --duration 0.1 -o {d}/s.bin",
        2,
        r"s\.bin exists",
        files={"s.bin": "precious"},
    ),
    c("sample-into-dir", "sample --devices lo --source netdev --duration 0.1 -o {d}", 2, r"is a directory"),
    c("sample-no-devices", "sample -o {d}/s.bin", 2, r"--devices"),
    c("sample-inventory-missing", "sample --inventory {d}/nope.yml --host a -o {d}/s.bin", 5, r"nope\.yml"),
    c(
        "sample-host-unknown",
        "sample --inventory {d}/inv.yml --host zz -o {d}/s.bin",
        2,
        r"zz is not a host",
        files={"inv.yml": inv()},
    ),
    c("discover-ssh-config-missing", "discover a b --ssh-config {d}/nope", 5, r"nope"),
    c(
        "discover-inventory-bad",
        "discover --inventory {d}/inv.yml",
        2,
        r"all\.vars",
        files={"inv.yml": "all:\n  vars: [1]\n"},
    ),
]

# ------------------------------------------------- the classes of the 2026-12-02 harness
# Each case failed on the code before it (an injection accepted, a hang, an internal error):
# one reader for the user's files, field rules for every value that reaches a generated file,
# text that is text wherever it is shown.

#: a file the case makes with os.mkfifo: a reader that opens it would block forever
FIFO = b"\x00<fifo>\x00"
#: a file the case makes executable (Ansible's script plugin would run it)
EXE = b"#!/bin/sh\ntouch {d}/PWNED\necho '{}'\n"
PAIR = yaml.safe_load((REPO / "inventory/pair-1cable.yml").read_text())
INI = "[all]\nspark-a ansible_host=10.0.0.21\nspark-b ansible_host=10.0.0.22\n"
GROUP = yaml.safe_dump({"sparkfab": PAIR["all"]["vars"]["sparkfab"]})


def ini(id: str, culprit: str, code: int = 2, **files: str | bytes) -> Case:
    """The pair as hosts.ini with group_vars/ and host_vars/ (Ansible's reader)."""
    given = {"hosts.ini": INI, "group_vars/all.yml": GROUP, **{k.replace("__", "/"): v for k, v in files.items()}}
    return c(id, "validate {d}/hosts.ini", code, culprit, files=given)


def with_recipe(id: str, recipe: str | bytes, culprit: str) -> Case:
    """The pair serving `evil`, a recipe in launchers/ beside the inventory."""
    data = copy.deepcopy(PAIR)
    data["all"]["vars"]["sparkfab"]["instances"]["llama"]["launcher"] = "evil"
    return c(
        id,
        "render {d}/inv.yml -o {d}/out",
        2,
        culprit,
        files={"inv.yml": yaml.safe_dump(data), "launchers/evil.yml": recipe},
    )


def evil(**fields: Any) -> str:
    base = {"description": "x", "engine": "vllm", "image": "vllm/vllm-openai:v0.32.0", "model": "org/model"}
    return yaml.safe_dump({**base, **fields})


def pair_host(value: Any, key: str = "ansible_host") -> str:
    data = copy.deepcopy(PAIR)
    data["all"]["hosts"]["spark-a"][key] = value
    return yaml.safe_dump(data, allow_unicode=True)


ROBUST_CASES = [
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
    # J2, J3: a recipe's values reach docker run and the env files as the instance's do
    with_recipe("recipe-shm-subst", evil(shm_size="$(touch P)"), r"shm_size: '\$\(touch P\)' is not a size"),
    with_recipe("recipe-shm-privileged", evil(shm_size="64g --privileged -v /:/host"), r"shm_size.*not a size"),
    with_recipe("recipe-shm-amp", evil(shm_size="1g & touch P"), r"shm_size"),
    with_recipe("recipe-env-newline", evil(env={"A": "x\nSPARKFAB_INJECTED=1"}), r"env\.A"),
    with_recipe("recipe-env-name", evil(env={"A B": "x"}), r"env"),
    with_recipe("recipe-volume-space", evil(volumes=["/a b:/c"]), r"volumes"),
    with_recipe("recipe-flag-name", evil(flags={"max-model-len 5 --x": 1}), r"flags"),
    with_recipe("recipe-entrypoint-newline", evil(entrypoint=["vllm\nserve"]), r"entrypoint"),
    with_recipe("recipe-latin1", evil().encode() + b"# caf\xe9\n", r"evil\.yml:5: not UTF-8"),
    with_recipe("recipe-huge", evil() + "#" + "x" * (9 << 20) + "\n", r"evil\.yml: .*larger than 8 MiB"),
    with_recipe(
        "recipe-alias-bomb",
        evil() + bomb().replace("all:\n  vars:\n", "").replace("    sparkfab: {cluster: x}\n", ""),
        r"evil\.yml",
    ),
    with_recipe("recipe-fifo", FIFO, r"evil\.yml: .*not a regular file"),
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
    c(
        "estimate-config-fifo",
        "estimate --config {d}/c.json",
        2,
        r"c\.json: .*not a regular file",
        files={"c.json": FIFO},
    ),
    c("estimate-plan-fifo", "estimate --plan {d}/p.yml", 2, r"p\.yml: .*not a regular file", files={"p.yml": FIFO}),
    c("schema-o-fifo", "schema -o {d}/s.json", 2, r"s\.json is not a regular file", files={"s.json": FIFO}),
    c("traffic-fifo", "traffic {d}/s.bin", 2, r"s\.bin: is not a regular file", files={"s.bin": FIFO}),
    traffic("traffic-plot-fifo", "--plot {d}/p.png", 2, r"p\.png is not a regular file", files_extra={"p.png": FIFO}),
    traffic(
        "traffic-export-fifo", "--export {d}/x.csv", 2, r"x\.csv is not a regular file", files_extra={"x.csv": FIFO}
    ),
    report(
        "report-requests-fifo",
        "report {d}/r -o {d}/out",
        2,
        r"requests\.jsonl: is not a regular file",
        files={**run_dir_files("r"), "r/requests.jsonl": FIFO},
    ),
    report(
        "report-run-json-deep",
        "report {d}/r -o {d}/out",
        2,
        r"run\.json: JSON nested too deep",
        files=run_dir_files("r", meta="[" * 100_000 + "]" * 100_000),
    ),
    # text is text: rich markup, mathtext and terminal escapes from names and labels
    c("estimate-model-markup", "estimate --config {d}/c.json", 0, r"", files={"c.json": config(model_type="[/bold]")}),
    c(
        "estimate-plot-mathtext",
        "estimate --config {d}/c.json --plot {d}/p",
        0,
        r"",
        files={"c.json": config(model_type="$\\undefinedcmd$")},
        outputs=("p",),
    ),
    report(
        "report-label-mathtext",
        "report {d}/r -o {d}/out",
        0,
        r"",
        files=run_dir_files(
            "r", meta={"url": "http://127.0.0.1:1", "model": "m", "label": "$\\undefined^$", "plan": []}
        ),
        outputs=("out",),
    ),
    validate("cluster-terminal-escape", inv(sfset("cluster", "\x1b]0;owned\x07\x1b[2J")), r"\\x1b\]0;owned\\x07"),
]

# memory has a bound too: bins over a span, a window narrower than a nanosecond
SPAN_CASES = [
    traffic(
        "traffic-span-30y", "", 2, r"bins.*more than", data=sample_file(records=2, step_ns=30 * 365 * 86400 * 10**9)
    ),
    traffic("traffic-span-1h-01ms", "--intervals 0.1ms", 2, r"more than", data=sample_file(3, step_ns=1800 * 10**9)),
    traffic("traffic-window-tiny", "--window 0:0.0000000001", 2, r"narrower than a nanosecond"),
    traffic("traffic-window-after", "--window 100:200", 2, r"after the samples end"),
]

# waits have a bound as a whole, not per read: a server that trickles
TRICKLE_CASES = [
    bench(
        "bench-trickle-version",
        "--timeout 5 --plan P1",
        0,
        r"",
        server="trickle-version",
        seconds=25,
        outputs=("run",),
        slow=True,
    ),
    bench(
        "bench-trickle-metrics",
        "--timeout 5 --plan P1",
        0,
        r"",
        server="trickle-metrics",
        seconds=25,
        outputs=("run",),
        slow=True,
    ),
    bench("bench-gzip-metrics", "--timeout 5 --plan P1", 0, r"", server="gzip-metrics", seconds=20, outputs=("run",)),
    c(
        "battery-trickle-chat",
        "battery --url {url} --model m --checks count --timeout 3",
        5,
        r"(within 3 s|timed out)",
        server="trickle-chat",
    ),
    c("bench-url-query", "bench --url http://127.0.0.1:1/?x=1 --model m -o {d}/run", 2, r"without a query"),
    c("bench-url-fragment", "bench --url http://127.0.0.1:1/#x --model m -o {d}/run", 2, r"without a query"),
    bench("bench-key-unicode", "--api-key-env KEY", 2, r"--api-key-env KEY: .*header", env={"KEY": "ключ"}),
    bench("bench-key-newline", "--api-key-env KEY", 2, r"--api-key-env KEY", env={"KEY": "a\nb"}),
    bench(
        "bench-cafile-garbage", "--ca-file {d}/ca.pem", 2, r"--ca-file .*ca\.pem: not a PEM", files={"ca.pem": "nope"}
    ),
    bench("bench-idle-below-zero", "--idle-below 0 --counters lo --source netdev", 2, r"--idle-below"),
]


def samples_of(header: dict[str, Any], records: list[tuple[int, ...]]) -> bytes:
    """A sample file with this header and these records (t0, t1, missed, pad, counters...)."""
    blob = json.dumps(header).encode()
    rec = struct.Struct("<qqII" + "Q" * len(header["counters"]))
    return b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", len(blob)) + blob + b"".join(rec.pack(*r) for r in records)


def header(**kw: Any) -> dict[str, Any]:
    one = [{"path": "/c0", "device": "d", "direction": "tx", "unit": 4}]
    return {"version": 1, "interval_s": 0.001, "counters": one, "anchor": {"wall_ns": 0, "mono_ns": 0}, **kw}


def ticks(n: int = 50, step: int = 1_000_000) -> list[tuple[int, ...]]:
    return [(step * k, step * k + 1000, 0, 0, k * 31_250) for k in range(n)]


def bad_row(**kw: Any) -> str:
    """requests.jsonl of run r: one good record, and one with these fields changed."""
    return row() + "\n" + row(**kw) + "\n"


def pair_sf(key: str, value: Any) -> str:
    data = copy.deepcopy(PAIR)
    data["all"]["vars"]["sparkfab"][key] = value
    return yaml.safe_dump(data, allow_unicode=True)


def pair_inst(**fields: Any) -> str:
    data = copy.deepcopy(PAIR)
    data["all"]["vars"]["sparkfab"]["instances"]["llama"].update(fields)
    return yaml.safe_dump(data, allow_unicode=True)


def _seven() -> dict[str, Any]:
    """A pair with seven independent problems: each is reported."""
    data = copy.deepcopy(PAIR)
    sfb, llama = data["all"]["vars"]["sparkfab"], data["all"]["vars"]["sparkfab"]["instances"]["llama"]
    sfb.update(mtu=100, link_speed=7)
    llama.update(launcher="nope", tp=3, bogus=1, env={"1X": "a"})
    data["all"]["hosts"]["spark-a"]["ansible_host"] = "bad host"
    return data


# the classes still open after the first part (review 2026-12-02, second pass): each case failed
# before this change (an internal error, a hang, or nonsense accepted with exit 0), but the
# cluster name's trailing newline, which pydantic's own pattern already refused (kept beside
# the ones Python's `$` let through)
CLASS_CASES = [
    # every unexpected shape of a sample file is the bad-input code naming it
    traffic(
        "samples-rx-only",
        "",
        2,
        r"no tx counters.*--direction",
        data=samples_of(header(counters=[{"path": "/c0", "device": "d", "direction": "rx", "unit": 4}]), ticks()),
    ),
    traffic("samples-anchor-int", "", 2, r"s\.bin: the header's anchor", data=samples_of(header(anchor=5), ticks())),
    traffic("samples-anchor-text", "", 2, r"anchor", data=samples_of(header(anchor={"wall_ns": "x"}), ticks())),
    traffic(
        "samples-unit-huge",
        "",
        2,
        r"s\.bin: .*unit 1-",
        data=samples_of(header(counters=[{"path": "/c0", "device": "d", "direction": "tx", "unit": 10**30}]), []),
    ),
    traffic(
        "samples-header-deep",
        "",
        2,
        r"s\.bin: the header is not JSON",
        data=b"SPARKFAB-SAMPLES v1\n" + struct.pack("<I", 200_000) + b"[" * 100_000 + b"]" * 100_000,
    ),
    traffic(
        "samples-bracket-reversed",
        "",
        2,
        r"s\.bin: record 0: its read ends",
        data=samples_of(header(), [(t1 + 5000, t1, m, p, v) for t1, _, m, p, v in ticks()]),
    ),
    traffic(
        "samples-one-instant",
        "",
        2,
        r"s\.bin: record 1 is not later",
        data=samples_of(header(), [(1000, 2000, 0, 0, k) for k in range(50)]),
    ),
    traffic("export-upper-case", "--export {d}/x.CSV", 0, r"", outputs=("x.CSV",)),
    # a record's file name stays inside the run; nested lines are skipped like torn ones
    report(
        "report-traffic-file-absolute",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable",
        files={**run_dir_files("r"), "r/requests.jsonl": bad_row(traffic_file="/etc/passwd")},
        outputs=("out",),
    ),
    report(
        "report-traffic-file-number",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable",
        files={**run_dir_files("r"), "r/requests.jsonl": bad_row(traffic_file=5)},
        outputs=("out",),
    ),
    report(
        "report-line-deep",
        "report {d}/r -o {d}/out",
        0,
        r"skipped 1 unreadable",
        files={**run_dir_files("r"), "r/requests.jsonl": row() + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"},
        outputs=("out",),
    ),
    report(
        "report-model-and-config",
        "report {d}/a --estimate --model glm-5.3 --config {d}/c.json -o {d}/out",
        2,
        r"--model and --config",
        files={"c.json": config()},
    ),
    report(
        "report-tp-heads",
        "report {d}/a --estimate --model glm-5.3 --tp 7 -o {d}/out",
        2,
        r"TP 7 does not divide the 64 attention heads",
    ),
    report("report-model-without-estimate", "report {d}/a --model glm-5.3 -o {d}/out", 2, r"for --estimate"),
    # numbers where they enter: a link speed, a name
    c("estimate-to-tiny", "estimate --to 1e-300 --format json", 2, r"--to"),
    c("init-cluster-empty", ("init", "pair", "--cluster", ""), 2, r"--cluster ''"),
    c("init-cluster-newline", ("init", "pair", "--cluster", "abc\n"), 2, r"--cluster 'abc\\n'"),
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
    c(
        "collective-in-docker",
        "render {d}/inv.yml -o {d}/out",
        2,
        r"runtime docker runs the recipe's image",
        files={"inv.yml": pair_inst(launcher="lab-collective", runtime="docker")},
    ),
    # a resumed run whose server.json is not bench's is refused before a request is sent
    # server answers nested too deep for Python's parser: the server's fault (5) or ignored
    bench("bench-deep-version", "--plan P1", 0, r"", server="deep-version", outputs=("run",)),
    bench("bench-huge-version", "--plan P1", 0, r"", server="huge-version", outputs=("run",)),
    # (the double counts 8 tokens for any text: no exact text prompts, the server is at fault)
    bench("bench-deep-tokenize", "--plan P1", 5, r"token counts cannot be used", server="deep-tokenize"),
    bench("bench-deep-sse", "--plan P1", 5, r"malformed chunk", server="deep-sse", outputs=("run",)),
    c(
        "battery-deep-chat",
        "battery --url {url} --model m --checks count --timeout 3",
        4,
        r"",
        server="deep-chat",
    ),
    bench("bench-server-counts-wrong", "--plan P1", 5, r"token counts cannot be used", server="huge-count"),
    validate("host-named-no", yaml.safe_dump(PAIR).replace("spark-b", "no"), r"a host named False: YAML read"),
    validate("host-named-float", yaml.safe_dump(PAIR).replace("spark-b", "1.10"), r"a host named 1\.1: YAML"),
    c(
        "render-o-name-too-long",
        "render {d}/inv.yml -o {d}/" + "n" * 300,
        5,
        r"File name too long",
        files={"inv.yml": yaml.safe_dump(PAIR)},
    ),
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
    c("bench-model-empty", ("bench", "--url", "{url}", "--model", "", "-o", "{d}/run"), 2, r"--model", server="good"),
    bench(
        "bench-plan-name-newline",
        "--plan {d}/p.yml",
        2,
        r"name 'P1\\n'",
        files={"p.yml": yaml.safe_dump([{"name": "P1\n", "requests": 1, "prompt_tokens": 20}])},
    ),
    bench(
        "bench-plan-too-many-tokens",
        "--plan {d}/p.yml",
        2,
        r"more than 16,777,216 tokens",
        files={"p.yml": "- {name: big, requests: 256, prompt_tokens: 2097152, output_tokens: 1}\n"},
    ),
    bench(
        "bench-resume-server-garbage",
        "--resume --plan P1",
        2,
        r"server\.json: not JSON",
        files={**run_dir_files("run"), "run/server.json": "{garb"},
        outputs=("run/.bench.lock",),
    ),
    bench(
        "bench-resume-server-list",
        "--resume --plan P1",
        2,
        r"server\.json: not the mapping",
        files={**run_dir_files("run"), "run/server.json": "[]"},
        outputs=("run/.bench.lock",),
    ),
]

CASES = (
    CLASS_CASES
    + ROBUST_CASES
    + SPAN_CASES
    + TRICKLE_CASES
    + INVENTORY_CASES
    + RENDER_CASES
    + ESTIMATE_CASES
    + TRAFFIC_CASES
    + REPORT_CASES
    + BENCH_CASES
    + BATTERY_CASES
    + SAMPLE_CASES
)


def test_the_table_is_large_and_its_names_unique():
    assert len(CASES) >= 150
    assert len({k.id for k in CASES}) == len(CASES)


# ------------------------------------------------------------------- misbehaving servers


class _Raw(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "good"
    served: ClassVar[list[int]] = [0]

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def _json(self, data: Any, code: int = 200) -> None:
        raw = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _raw(self, raw: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        if self.mode == f"trickle{self.path.replace('/', '-')}":
            self._trickle()
            return
        if self.mode == "huge-version" and self.path == "/version":
            self._json({"version": "9" * (900 << 10)})
            return
        if self.mode == "deep-version" and self.path == "/version":
            self._raw(b"[" * 200_000 + b"]" * 200_000)
            return
        if self.mode == "gzip-metrics" and self.path == "/metrics":
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(_bomb())))
            self.end_headers()
            self.wfile.write(_bomb())
            return
        self._json({"status": "ok"})

    def _trickle(self) -> None:
        """Headers, then one byte every 0.3 s: each read is quick, the answer never ends."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        for _ in range(1000):
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(0.3)

    def _odd_post(self) -> bool:
        """The modes whose answer to a POST is not JSON Python reads, or counts that are wrong."""
        deep = b"[" * 200_000 + b"]" * 200_000
        if self.mode == "huge-count":  # no /tokenize, and a million tokens for any text
            if self.path == "/tokenize":
                self._json({"detail": "Not Found"}, 404)
            else:
                self._json({"choices": [{"text": "x"}], "usage": {"prompt_tokens": 1_000_000}})
        elif self.mode == "deep-tokenize" and self.path == "/tokenize":
            self._raw(deep)
        elif self.mode == "deep-chat" and self.path == "/v1/chat/completions":
            self._raw(b'{"choices": ' + deep + b"}")
        else:
            return False
        return True

    def do_POST(self) -> None:
        body = self._body()
        if self.mode == "trickle-chat" and self.path == "/v1/chat/completions":
            self._trickle()
            return
        if self._odd_post():
            return
        if self.path == "/tokenize":
            self._json({"tokens": list(range(100, 140)), "count": 40})
            return
        if not body.get("stream"):
            self._json({"choices": [{"text": "x", "finish_reason": "length"}], "usage": {"prompt_tokens": 8}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        n = body.get("max_tokens", 4)
        with _LOCK:
            self.served[0] += 1
            k = self.served[0]
        for i in range(n):
            if self.mode == "bad-chunk" and k == 2 and i == 1:
                self._chunk(b"data: {not json at all\n\n")
                continue
            if self.mode == "deep-sse" and i == 1:
                self._chunk(b"data: " + b"[" * 200_000 + b"]" * 200_000 + b"\n\n")
                continue
            if self.mode == "stall" and i == 1:
                time.sleep(3)
            self._chunk(b"data: " + json.dumps({"choices": [{"text": "x", "index": 0}]}).encode() + b"\n\n")
        usage = {"prompt_tokens": len(body.get("prompt", [])), "completion_tokens": n}
        self._chunk(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\ndata: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


_LOCK = threading.Lock()


@functools.cache
def _bomb() -> bytes:
    """A gzip body of 24 KiB that inflates to 24 MiB of spaces."""
    return gzip.compress(b" " * (24 << 20), compresslevel=9)


def _closed_port() -> tuple[str, Callable[[], None]]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}", lambda: None


def _raw_socket(mode: str) -> tuple[str, Callable[[], None]]:
    """silent: accepts and never answers; garbage: answers with something that is not HTTP."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    s.settimeout(0.2)
    done = threading.Event()
    conns: list[socket.socket] = []

    def loop() -> None:
        while not done.is_set():
            try:
                conn, _ = s.accept()
            except OSError:
                continue
            conns.append(conn)
            if mode == "garbage":
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\x00\x01garbage\r\n\r\n")

    t = threading.Thread(target=loop, daemon=True)
    t.start()

    def stop() -> None:
        done.set()
        t.join()
        for x in conns:
            x.close()
        s.close()

    return f"http://127.0.0.1:{s.getsockname()[1]}", stop


def _http(mode: str) -> tuple[str, Callable[[], None]]:
    handler = type("H", (_Raw,), {"mode": mode, "served": [0]})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    httpd.handle_error = lambda *_: None  # type: ignore[method-assign]  # a client that gave up is the point
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()

    return f"http://127.0.0.1:{httpd.server_address[1]}", stop


@pytest.fixture
def server() -> Iterator[Callable[[str], str]]:
    stops: list[Callable[[], None]] = []

    def start(mode: str) -> str:
        make = (
            _closed_port
            if mode == "closed"
            else (lambda: _raw_socket(mode))
            if mode in ("silent", "garbage")
            else (lambda: _http(mode))
        )
        url, stop = make()
        stops.append(stop)
        return url

    yield start
    for stop in stops:
        stop()


# ------------------------------------------------------------------------- the runner


def _tree(root: Path, skip: tuple[str, ...]) -> dict[str, str]:
    """Checksums of everything under root but the outputs a case may write (under case/)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if any(rel == f"case/{s}" or rel.startswith(f"case/{s}/") for s in skip):
            continue
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


class _Hang(Exception):
    pass


@pytest.mark.parametrize(
    "case", [pytest.param(k, marks=pytest.mark.slow) if k.slow else k for k in CASES], ids=lambda k: k.id
)
def test_hostile_input(case: Case, tmp_path, capsys, monkeypatch, server):
    from sparkfab.cli import main

    d = tmp_path / "case"
    d.mkdir()
    for rel, content in case.files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if content == FIFO:
            os.mkfifo(p)
        elif content == EXE:
            p.write_bytes(EXE.replace(b"{d}", str(d).encode()))
            p.chmod(0o755)
        else:
            p.write_bytes(content if isinstance(content, bytes) else content.encode())
    url = server(case.server) if case.server else ""
    argv = [a.replace("{d}", str(d)).replace("{url}", url) for a in case.argv]
    monkeypatch.chdir(d)
    monkeypatch.setenv("SPARKFAB_LAB_DIR", str(tmp_path / "labs"))
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    before = _tree(tmp_path, case.outputs)

    def hang(*_: Any) -> None:
        raise _Hang(f"{case.id} ran past {case.seconds * 3:.0f} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, case.seconds * 3)
    t0 = time.monotonic()
    try:
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    elapsed = time.monotonic() - t0
    _out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err, err
    assert code == case.code, f"exit {code}, expected {case.code}: {err[-2000:]}"
    assert re.search(case.culprit, err), f"{case.culprit!r} not in: {err[-2000:]}"
    assert max((len(line) for line in err.splitlines()), default=0) <= 300, err[:600]
    if code != 0:
        assert len(err.splitlines()) <= 100, err[:2000]
    assert elapsed < case.seconds, f"{case.id} took {elapsed:.1f} s"
    after = _tree(tmp_path, case.outputs)
    assert after == before, f"changed outside {case.outputs}: {set(after.items()) ^ set(before.items())}"


@pytest.mark.parametrize(
    "env",
    [
        {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"},
        {"PYTHONIOENCODING": "ascii"},
    ],
    ids=["c-locale", "ascii-stdio"],
)
def test_report_of_a_label_beyond_ascii_in_a_locale_without_utf8(tmp_path, env):
    """The locale is the process's own (set at its start): a child with it, as a user runs it."""
    import subprocess
    import sys

    meta = {"url": "http://127.0.0.1:1", "model": "m", "label": "200-\u00fcn\u00ef", "plan": []}
    for rel, content in run_dir_files("r", meta=meta).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content, encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENC"))}
    res = subprocess.run(
        [sys.executable, "-m", "sparkfab", "report", "r", "-o", "out"],
        cwd=tmp_path,
        env={**base, **env},
        capture_output=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    assert "200-\u00fcn\u00ef" in (tmp_path / "out/report.md").read_text(encoding="utf-8")
    assert b"200-\\xfcn\\xef" in res.stdout or "200-\u00fcn\u00ef".encode() in res.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs (root)")
def test_a_disk_that_fills_during_bench_names_the_run(tmp_path, capsys, server):
    """requests.jsonl fills a 64 KiB tmpfs mid-run: exit 5 with the run directory, not a bare
    'No space left on device'."""
    import subprocess

    from sparkfab.cli import main

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "fill").write_bytes(b"x" * (60 << 10))
        url = server("good")
        argv = f"bench --url {url} --model m --plan P1 --rounds 4 --warmup 0 --idle-seconds 0 --output-tokens 200"
        code = main([*argv.split(), "-o", str(mnt / "run")])
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    err = capsys.readouterr().err
    assert code == 5, err[-1500:]
    assert f"-o {mnt / 'run'}" in err and "No space left on device" in err, err[-1500:]
