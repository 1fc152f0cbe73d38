"""Which network the serving engine's NCCL chose, from its own log (`NCCL_DEBUG=INFO`).

NCCL says it at init and per channel (src/init.cc, src/transport/net.cc, net_ib/init.cc):

    NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB enP7s7:10.0.1.11<0>
    NCCL INFO Using network IB
    NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA

and, when it found no usable RDMA device (a missing /dev/infiniband in the container, a wrong
NCCL_IB_HCA), falls back to TCP sockets:

    NCCL INFO NET/Socket : Using [0]enP7s7:10.0.1.11<0>
    NCCL INFO Using network Socket
    NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/Socket/0

A rank whose NCCL runs over sockets on a Spark moves its all-reduces at a fraction of the
fabric's rate while every other check is green: verify fails it.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
import shlex
from dataclasses import dataclass, field

from sparkfab import connection
from sparkfab.facts.remote import Remote
from sparkfab.plan import Instance, Plan
from sparkfab.render.launch import LAUNCH_DIR
from sparkfab.verify.catalog import Check
from sparkfab.verify.result import FAIL, PASS, Result

_NETWORK = re.compile(r"NCCL INFO Using network (\S+)")
_CHANNEL = re.compile(r"NCCL INFO Channel \d+/\d+ : .* via NET/([A-Za-z_]+)/")
_DEVICES = re.compile(r"NCCL INFO NET/IB : Using((?: \[\d+\][^ ;]+)+)")


@dataclass(frozen=True)
class Transport:
    """What one rank's log says of its NCCL network."""

    networks: tuple[str, ...] = ()  # "Using network X", in the order logged
    channels: dict[str, int] = field(default_factory=dict)  # network -> channel connections over it
    devices: tuple[str, ...] = ()  # the IB/RoCE devices NCCL's IB transport listed

    @property
    def seen(self) -> bool:
        return bool(self.networks or self.channels)

    @property
    def sockets(self) -> bool:
        return "Socket" in self.networks or "Socket" in self.channels


def parse(log: str) -> Transport:
    networks = tuple(m.group(1) for m in _NETWORK.finditer(log))
    channels: dict[str, int] = {}
    for m in _CHANNEL.finditer(log):
        channels[m.group(1)] = channels.get(m.group(1), 0) + 1
    devices: list[str] = []
    for m in _DEVICES.finditer(log):
        for dev in m.group(1).split():
            name = re.sub(r"^\[\d+\]", "", dev).split(":")[0]
            if name not in devices:
                devices.append(name)
    return Transport(networks, channels, tuple(devices))


def log_command(inst: Instance) -> str:
    """The NCCL lines of the engine's log on one rank (its container's, or its launch log)."""
    pattern = shlex.quote("NCCL INFO (Using network|NET/IB : Using|NET/Socket : Using|Channel .* via NET/)")
    if inst.runtime == "docker":
        source = f"docker logs {shlex.quote(f'sparkfab-{inst.name}')} 2>&1"
    else:
        source = f"cat {shlex.quote(f'{LAUNCH_DIR}/{inst.name}.log')} 2>/dev/null"
    return f"{source} | grep -E {pattern} | tail -n 2000"


def judge(inst: Instance, host: str, t: Transport) -> Result:
    """PASS where NCCL runs over IB/RoCE, FAIL where it fell back to sockets; a row "not judged"
    where the log says nothing of NCCL's network, never silence: NCCL_DEBUG is not INFO for INIT
    and NET in the engine's environment, the log was cut, or the engine does not use NCCL (the
    lab's CPU engines all-reduce with Gloo)."""
    if not t.seen:
        return Result.skip(
            Check.NCCL_TRANSPORT,
            host,
            inst.name,
            "not judged: the engine's log has no NCCL INFO line of its network (NCCL_DEBUG=INFO and "
            "NCCL_DEBUG_SUBSYS=INIT,NET print them at start-up: sparkfab's nccl.env sets both; an engine on "
            "CPUs, as in the lab, all-reduces with Gloo and has none)",
        )
    if t.sockets:
        over = ", ".join(f"{n} channel connections over {k}" for k, n in sorted(t.channels.items())) or "no channel"
        return Result(
            check=Check.NCCL_TRANSPORT,
            host=host,
            subject=inst.name,
            expected="NET/IB",
            actual="NET/Socket",
            status=FAIL,
            detail=f"the engine's NCCL fell back to TCP sockets ({over}): its RDMA devices were not usable in the "
            "engine (the container's /dev/infiniband, NCCL_IB_HCA against `ibdev2netdev`)",
        )
    devices = ", ".join(t.devices) if t.devices else "devices not listed"
    return Result(
        check=Check.NCCL_TRANSPORT,
        host=host,
        subject=inst.name,
        expected="NET/IB",
        actual=f"NET/IB ({devices})",
        status=PASS,
    )


def transports(plan: Plan, hosts: dict[str, Remote], running: list[tuple[str, str]]) -> list[Result]:
    """One row per running rank (instance, host): its engine's NCCL network, or why not judged."""
    insts = {i.name: i for i in plan.instances}

    def one(item: tuple[str, str]) -> Result:
        name, host = item
        try:
            res = connection.as_root(hosts[host]).run(log_command(insts[name]))
        except Exception as exc:  # unreachable meanwhile
            return Result.skip(Check.NCCL_TRANSPORT, host, name, f"not judged: its log could not be read ({exc})"[:200])
        return judge(insts[name], host, parse(res.stdout))

    with cf.ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(one, running))
