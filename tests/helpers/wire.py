"""A wire for LLDP tests: two network namespaces of the test's own joined by a veth, the real
lldpd on one end (`lldpd`'s end, with a /run of its own), sparkfab's frame relay
(`assets/lldp_probe.py`) on the other. Everything carries a name of this run's own and is removed
by pid and name when the block ends."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

PROBE = REPO / "fabric" / "sparkfab" / "assets" / "lldp_probe.py"


@dataclass
class Wire:
    near: str  # lldpd's namespace
    far: str  # the relay's namespace
    near_if: str
    far_if: str
    lldpd: subprocess.Popen[bytes]

    def lldpcli(self, *args: str) -> str:
        """lldpcli against this wire's lldpd (in its mount namespace, for its socket)."""
        argv = ["nsenter", "-t", str(self.lldpd.pid), "-m", "-n", "lldpcli", *args]
        return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=20).stdout

    def relay(self, config: dict[str, object], timeout: float = 60) -> list[dict[str, object]]:
        """Run the relay in the far namespace with `config`; its JSON lines."""
        argv = ["ip", "netns", "exec", self.far, sys.executable, "-I", str(PROBE), json.dumps(config)]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=timeout).stdout
        return [json.loads(line) for line in out.splitlines()]

    def send(self, lldpdus: list[bytes], seconds: float = 1.5) -> None:
        """Send each LLDPDU once from the far end (one relay run each: a neighbour each)."""
        for du in lldpdus:
            self.relay({"send": {self.far_if: du.hex()}, "every": 5, "seconds": 0.3})
        time.sleep(seconds)

    def neighbours_json0(self) -> str:
        return self.lldpcli("-f", "json0", "show", "neighbors")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def lldpd_wire(conf: str = "") -> Iterator[Wire]:
    """A veth with lldpd (announcing as shipped, plus `conf`'s lines) on its near end."""
    tag = uuid.uuid4().hex[:6]
    near, far, near_if, far_if = f"sft-{tag}-n", f"sft-{tag}-f", f"sftn{tag}", f"sftf{tag}"
    _ip("netns", "add", near)
    _ip("netns", "add", far)
    proc: subprocess.Popen[bytes] | None = None
    try:
        _ip("link", "add", near_if, "netns", near, "type", "veth", "peer", "name", far_if, "netns", far)
        for ns, ifname in ((near, near_if), (far, far_if)):
            _ip("-n", ns, "link", "set", ifname, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        conf_file = Path(f"/tmp/{near}.conf")
        conf_file.write_text(conf)
        script = (
            "mount -t tmpfs -o mode=755 sft-run /run && mkdir -p /run/lldpd && "
            f"exec lldpd -d -O {conf_file} -I {near_if}"
        )
        argv = ["ip", "netns", "exec", near, "unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wire = Wire(near, far, near_if, far_if, proc)
        for _ in range(100):
            with contextlib.suppress(subprocess.CalledProcessError):
                wire.lldpcli("show", "chassis")
                break
            time.sleep(0.05)
        yield wire
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
            if proc.poll() is None:
                proc.kill()
        for ns in (near, far):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        with contextlib.suppress(OSError):
            os.unlink(f"/tmp/{near}.conf")
