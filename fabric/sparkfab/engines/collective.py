"""The collective: sparkfab's own torch.distributed all-reduce server (`assets/collective.py`),
the lab's stand-in for an engine and the fabric's load. It runs from the host's Python."""

from __future__ import annotations

from sparkfab.engines.base import Engine, LabServing, RankArgs

#: where apply installs it on every host
COLLECTIVE_PATH = "/etc/sparkfab/collective.py"


class Collective(Engine):
    name = "collective"
    title = "the collective"
    command = ("python3", COLLECTIVE_PATH, "serve")
    server = "the collective"
    default_runtime = "process"
    needs_image = False
    per_rank = ("--rank",)
    warms = False  # no model: its HTTP port answers /health and the collective's own verbs
    #: seconds to start: the lab's engine for tests of the start order and the Ansible path
    lab = LabServing("lab-collective", "process")

    def argv(self, r: RankArgs) -> list[str]:
        return [
            *self.command,
            *("--rank", str(r.rank), "--world-size", str(r.nnodes)),
            *("--master-addr", r.http_addr, "--master-port", str(r.dist_port)),
            *("--http-port", str(r.port)),
        ]


ENGINE = Collective()
