"""A host's facts: what a command says of a host, asked and parsed in one place.

A `Fact` is a command and its parser (pyinfra's idea, without its metaclass): `LINKS.of(th)` runs
`ip -j link show` on a host and gives its netdevs. verify's checks, preflight, discover and the
lab ask the same records, so a command and how its answer reads are written once, and the list
of what verify gathers in one round trip (`gather.prefetch`) is made of the very commands the
checks then ask: the two cannot drift apart. The facts, by subject:

- `netdevs`: the netdevs (`LINKS`), their IPv4 addresses (`ADDRESSES`), speeds (`SPEEDS`),
  MAC addresses and drivers (`DRIVERS`), a route lookup (`ROUTE`);
- `neighbours`: what lldpd heard on each netdev and the host's own chassis (`NEIGHBOURS`);
- `nft`: sparkfab's nftables table (`TABLE`) and the whole ruleset (`RULESET`);
- `rdma`: where an RDMA port's state, rate, counters and GID table are (files, read by path);
- `gather`: the checks' commands and files in one command on the host; `remote`: the part of a
  testinfra Host the facts use (a table of answers stands in for a Spark in unit tests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sparkfab.facts.remote import Answer, Remote

T = TypeVar("T")


@dataclass(frozen=True)
class Fact(Generic[T]):
    """One fact: the command that asks a host for it (given the fact's arguments, e.g. the
    netdevs) and the parser of its answer."""

    name: str
    command: Callable[..., str]
    parse: Callable[[Answer], T]

    def of(self, th: Remote, *args: Any) -> T:
        """The fact of the host `th`."""
        return self.parse(th.run(self.command(*args)))
