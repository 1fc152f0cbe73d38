"""What the serving image really is, on every rank: the same image ID everywhere, and an NCCL
that understands the variables the fabric relies on.

The rendered launch file (`/etc/sparkfab/launch/<instance>.json`) names the image; `docker image
inspect` gives its ID on each rank. The NCCL version comes from the image itself (torch inside
it reports the NCCL it loads), never from the inventory: an image with NCCL older than 2.30.7
silently ignores NCCL_IB_SUBNET_AWARE_ROUTING and a switchless ring times out.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from sparkfab.facts.remote import Remote
from sparkfab.plan import Instance, Plan
from sparkfab.render.launch import launch
from sparkfab.render.nccl import SUBNET_AWARE_SINCE
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import FAIL, PASS, Result

#: prints the NCCL version torch loads, e.g. "(2, 30, 7)"
NCCL_PROBE = "import torch; print(torch.cuda.nccl.version())"

_TUPLE = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
_DOTTED = re.compile(r"(?:NCCL version\s+|^|\s)(\d+)\.(\d+)\.(\d+)")
_CODE = re.compile(r"^\s*(\d{4,6})\s*$", re.M)


def parse_nccl_version(text: str) -> tuple[int, int, int] | None:
    """The NCCL version in torch's or NCCL's own words: `(2, 30, 7)` (torch >= 1.x), `23007`
    (NCCL_VERSION_CODE: major*10000 + minor*100 + patch, older torch), `NCCL version
    2.30.7+cuda13.0` (NCCL_DEBUG=INFO) or a plain `2.30.7`."""
    for pattern in (_TUPLE, _DOTTED):
        m = pattern.search(text)
        if m:
            major, minor, patch = (int(x) for x in m.groups())
            return major, minor, patch
    m = _CODE.search(text)
    if m:
        code = int(m.group(1))
        if code >= 20900:  # the 2.9+ encoding; before it, major*1000 + minor*100 + patch
            return code // 10000, code // 100 % 100, code % 100
        return code // 1000, code // 100 % 10, code % 100
    return None


def _image_of(plan: Plan, inst: Instance) -> str | None:
    """The image the instance runs, or None when it does not run in a container."""
    rec = inst.recipe
    if rec is None:
        return None
    lx = launch(plan, inst, plan.host(inst.hosts[0]), rec)
    return rec.image if lx.runtime == "docker" else None


def image_checks(plan: Plan, hosts: dict[str, Remote], reachable: set[str]) -> list[Result]:
    out: list[Result] = []
    for inst in plan.instances:
        image = _image_of(plan, inst)
        if image is None or not set(inst.hosts) <= reachable:
            continue
        out += same_image(inst, image, hosts)
        out.append(nccl_in_image(inst, image, hosts[inst.hosts[0]], inst.direct))
    return out


def same_image(inst: Instance, image: str, hosts: dict[str, Remote]) -> list[Result]:
    """Every rank holds the image, with one ID (nodes that pulled at different times differ)."""
    ids = {}
    for h in inst.hosts:
        res = hosts[h].run(f"docker image inspect --format '{{{{.Id}}}}' {shlex.quote(image)}")
        ids[h] = res.stdout.strip() if res.rc == 0 and res.stdout.strip() else "absent"
    want = ids[inst.hosts[0]]
    out = []
    for h, got in ids.items():
        status = FAIL if got == "absent" or got != want else PASS
        detail = f"`docker pull {image}` (or load it) on {h}" if got == "absent" else image
        out.append(
            Result(
                check=Check.IMAGE,
                host=h,
                subject=inst.name,
                expected=want[:19],
                actual=got[:19],
                status=status,
                detail=detail,
            )
        )
    return out


def nccl_in_image(inst: Instance, image: str, host: Any, needs_subnet_routing: bool) -> Result:
    if inst.recipe is not None and inst.recipe.tp_backend != "nccl":
        why = f"its all-reduces go over {inst.recipe.tp_backend} (a CPU engine): no NCCL"
        return Result.skip(Check.NCCL_VERSION, inst.hosts[0], inst.name, why)
    cmd = f"docker run --rm --entrypoint python3 {shlex.quote(image)} -c {shlex.quote(NCCL_PROBE)}"
    res = host.run(cmd)
    found = parse_nccl_version(res.stdout) if res.rc == 0 else None
    want = ".".join(map(str, SUBNET_AWARE_SINCE))
    if found is None:
        detail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
        return Result(
            check=Check.NCCL_VERSION,
            host=inst.hosts[0],
            subject=inst.name,
            expected=f">= {want}",
            actual="unknown",
            status=FAIL,
            detail=detail[0][:200],
        )
    got = ".".join(map(str, found))
    if not needs_subnet_routing:
        return Result(
            check=Check.NCCL_VERSION,
            host=inst.hosts[0],
            subject=inst.name,
            expected="any",
            actual=got,
            status=PASS,
            detail=f"{image} (switched: no subnet routing)",
        )
    ok = found >= SUBNET_AWARE_SINCE
    detail = image if ok else f"{image}: NCCL_IB_SUBNET_AWARE_ROUTING needs {want}; the ring would time out"
    return Result(
        check=Check.NCCL_VERSION,
        host=inst.hosts[0],
        subject=inst.name,
        expected=f">= {want}",
        actual=got,
        status=PASS if ok else FAIL,
        detail=detail,
    )
