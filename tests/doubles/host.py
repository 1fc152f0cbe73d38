"""A host that answers the checks from tables (the `sparkfab.facts.remote.Remote` protocol):
command prefixes to answers, files and sysctls; what the checks sent is recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Answer:
    rc: int
    stdout: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class FakeFile:
    exists: bool
    content_string: str = ""


@dataclass
class FakeHost:
    answers: dict[str, Answer] = field(default_factory=dict)  # the longest matching prefix answers
    files: dict[str, str] = field(default_factory=dict)
    sysctls: dict[str, Any] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)

    def run(self, command: str, *args: Any) -> Answer:
        self.sent.append(command)
        hits = [k for k in self.answers if command.startswith(k)]
        return self.answers[max(hits, key=len)] if hits else Answer(127, "", f"{command.split()[0]}: not found")

    def check_output(self, command: str, *args: Any) -> str:
        res = self.run(command)
        assert res.rc == 0, f"{command}: {res.stderr}"
        return res.stdout.rstrip("\n")

    def sysctl(self, name: str) -> Any:
        if name not in self.sysctls:  # as testinfra says it: `sysctl -n` exits 255 for a key that is not there
            raise AssertionError(f"Unexpected exit code 255 for sysctl -n {name}")
        return self.sysctls[name]

    def file(self, path: str) -> FakeFile:
        return FakeFile(path in self.files, self.files.get(path, ""))


def ip_link(**links: dict[str, Any]) -> str:
    """`ip -j link show` for netdevs given as name -> {mtu, up, carrier}."""
    rows = []
    for i, (name, o) in enumerate(links.items(), 2):
        flags = ["BROADCAST", "MULTICAST"] + (["UP"] if o.get("up", True) else [])
        flags += ["LOWER_UP"] if o.get("carrier", True) and o.get("up", True) else []
        rows.append({"ifindex": i, "ifname": name, "flags": flags, "mtu": o.get("mtu", 9000), "operstate": "UP"})
    return json.dumps(rows)


def ip_addr(**addrs: list[str]) -> str:
    """`ip -j -4 addr show` for netdevs given as name -> [address/prefix, ...]."""
    return json.dumps(
        [
            {
                "ifindex": i,
                "ifname": name,
                "addr_info": [
                    {"family": "inet", "local": a.split("/")[0], "prefixlen": int(a.split("/")[1])} for a in have
                ],
            }
            for i, (name, have) in enumerate(addrs.items(), 2)
        ]
    )
