"""An engine oracle as `assets/oracle_cli.py` runs one, with a checker that needs no engine: it
refuses a launch that carries `--refuse`, and `ENGINE_ORACLE_IMPORT_FAILS=1` makes its "import"
fail as an engine that is not installed right does. For the warm server's protocol tests
(tests/unit/oracle/test_warm.py); the real engines' oracles run in tests/slow/test_oracle.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fabric"))
from sparkfab.assets import oracle_cli

#: how many times the checker ran in this process: the answers carry it, so a test sees reuse
CALLS = [0]


def check(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if os.environ.get("ENGINE_ORACLE_IMPORT_FAILS") == "1":
        raise ImportError("libengine.so: cannot open shared object file")
    CALLS[0] += 1
    return [
        {"ok": "--refuse" not in x["argv"], "error": "refused" if "--refuse" in x["argv"] else "", "calls": CALLS[0]}
        for x in launches
    ]


if __name__ == "__main__":
    raise SystemExit(oracle_cli.main(__doc__, lambda: "", "", check, lambda: "9.9.9"))
