"""The mesh probe (`assets/mesh_probe.py`) as a rank runs it: `python3 -c SOURCE TARGETS`, against
loopback: a listening port connects, a closed one is refused (the reset came back), each with the
source the kernel picked and the route it took."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from sparkfab.assets import program


def test_a_listening_port_connects_and_a_closed_one_is_refused():
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: the kernel answers with a reset
        ports = [listening.getsockname()[1], closed.getsockname()[1]]
        res = subprocess.run(
            [sys.executable, "-c", program("mesh_probe.py"), json.dumps([["127.0.0.1", ports, 2]])],
            capture_output=True,
            text=True,
            check=True,
        )
    (one,) = json.loads(res.stdout)
    assert one["dst"] == "127.0.0.1" and isinstance(one["ping"], bool)
    assert [(t["port"], t["result"], t["source"]) for t in one["tcp"]] == [
        (ports[0], "connected", "127.0.0.1"),
        (ports[1], "refused", "127.0.0.1"),
    ]
    assert one["route"].get("dev") == "lo" or "error" in one["route"]
