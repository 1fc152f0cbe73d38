"""What a lab that is up is, written by `lab up` into `state.json`: the one record `lab
status`, the Target, the drills and a rebooting machine read. It holds the lab's plan (`LabSpec`)
itself, so that nothing needs the user's inventory to find a lab's namespaces, veths and machines
again, and the cables as they are now (`wiring`: what the drills swapped or cut, every netdev's
shaped rate), which the drills and the link-speed flips write back. (The link-speed mode the
hosts run is the cluster's own record, `cluster.speeds.current_link_speed`, as on Sparks.)
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sparkfab import paths
from sparkfab.errors import UsageError
from sparkfab.lab.spec import LabSpec, Node, Veth


@dataclass(frozen=True, kw_only=True)
class LabState:
    cluster: str
    inventory: str  # the user's inventory `lab up` was given
    engine: str  # what `serve` runs: vllm or collective
    spec: LabSpec
    pids: dict[str, int] = field(default_factory=dict)  # <node>.<what> -> pid (supervisors, switch lldpd)
    timing: dict[str, float] = field(default_factory=dict)
    keep_ray: bool = False  # `lab up --keep-ray`: instances planned on Ray keep it in the lab
    wiring: tuple[Veth, ...] | None = None  # the cables now (None: as the spec plans them)

    def cables(self) -> list[Veth]:
        """The lab's veths as they are wired and shaped now."""
        return list(self.wiring if self.wiring is not None else self.spec.veths)

    def write(self) -> None:
        path = self.spec.paths.state_file
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        os.replace(tmp, path)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["spec"]["dir"] = str(self.spec.dir)
        return data

    @classmethod
    def read(cls, lab_dir: Path) -> LabState:
        path = paths.LabPaths(lab_dir).state_file
        try:
            data = json.loads(path.read_text())
            spec = data["spec"]
            lab = LabSpec(
                **{
                    **spec,
                    "dir": Path(spec["dir"]),
                    "nodes": tuple(Node(**{**n, "frames": tuple(n.get("frames", ()))}) for n in spec["nodes"]),
                    "veths": tuple(Veth(**v) for v in spec["veths"]),
                    "switch_bridges": tuple(tuple(b) for b in spec["switch_bridges"]),
                }
            )
            return cls(
                cluster=data["cluster"],
                inventory=data["inventory"],
                engine=data["engine"],
                spec=lab,
                pids={k: int(v) for k, v in data.get("pids", {}).items()},
                timing=dict(data.get("timing", {})),
                keep_ray=data.get("keep_ray") is True,
                wiring=None if data.get("wiring") is None else tuple(Veth(**v) for v in data["wiring"]),
            )
        except FileNotFoundError:
            raise UsageError(f"no lab is up in {lab_dir} (no {path.name})") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}: not a lab's state ({exc}); `sparkfab lab down` removes what is left") from None


def is_up(cluster: str) -> bool:
    """The one answer to "is the lab of `cluster` up": `lab up` wrote its state (the last thing it
    does; `lab down` removes it first) and its namespaces are there (a reboot of this machine
    takes them and leaves the state). Namespaces without a state are what a failed `lab up` left:
    not a lab, and `lab down` removes them."""
    from sparkfab.lab.links import existing_namespaces

    return paths.lab_state(cluster).is_file() and bool(existing_namespaces(cluster))
