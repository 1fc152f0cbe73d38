"""The hostile-input table's parts: what a case is (`Case`), the builders of cases and of the
files they hand a verb (a ring inventory changed one way, a run directory, a sample file), and
the constants they share. The cases themselves are in one file per verb beside this one
(`test_<verb>.py`; the verbs that reach hosts, refused before they contact any, share
`test_reaching_hosts.py`); `runner.py` runs a case, `conftest.py` serves the misbehaving servers.
Each case was added where a harness or review found the verb misbehave (the comments name the
class), and asserts what the README promises."""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    files: dict[str, str | bytes | Callable[[], str | bytes]] = field(default_factory=dict)  # a callable: made when run
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


def render(id: str, argv: str, code: int, culprit: str, files: dict[str, str | bytes] | None = None, **kw: Any) -> Case:
    return c(id, argv, code, culprit, files={"inv.yml": inv(), **(files or {})}, **kw)


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


def report(id: str, argv: str, code: int, culprit: str, files: dict[str, str | bytes] | None = None, **kw: Any) -> Case:
    return c(id, argv, code, culprit, files={**run_dir_files("a"), **run_dir_files("b"), **(files or {})}, **kw)


def bench(
    id: str, argv: str | tuple[str, ...], code: int, culprit: str, server: str | None = "good", **kw: Any
) -> Case:
    """A bench against a case's server; `argv` as one string, or as words (one holding a space)."""
    base = "bench --url {url} --model fake-model --rounds 1 --warmup 0 --idle-seconds 0 --output-tokens 4 -o {d}/run"
    words = argv.split() if isinstance(argv, str) else list(argv)
    return c(id, (*base.split(), *words), code, culprit, server=server, **kw)


PLAN = "- {name: t, requests: 1, prompt_tokens: 20, output_tokens: 4}\n"


# ------------------------------------------------- files that are not what they claim, inventories
# the classes a harness found (an injection accepted, a hang, an internal error): one reader for
# the user's files, field rules for every value that reaches a generated file, text that is text
# wherever it is shown

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
