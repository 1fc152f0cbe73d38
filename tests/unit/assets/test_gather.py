"""The facts' gatherer (`assets/gather.py`) as a host runs it: `python3 -c SOURCE ASK`, its
commands side by side, its files read or null."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from sparkfab.assets import program


def test_commands_run_side_by_side_and_files_read_or_null(tmp_path):
    (tmp_path / "present").write_text("4: ACTIVE\n")
    ask = {
        "commands": ["echo out; echo err >&2", "exit 3", "sleep 1; echo a", "sleep 1; echo b"],
        "files": [str(tmp_path / "present"), str(tmp_path / "absent"), str(tmp_path)],  # a folder: unreadable
    }
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-c", program("gather.py"), json.dumps(ask)], capture_output=True, text=True, check=True
    )
    took = time.monotonic() - t0
    got = json.loads(res.stdout)
    assert got["commands"]["echo out; echo err >&2"] == [0, "out\n", "err\n"]
    assert got["commands"]["exit 3"][0] == 3
    assert got["commands"]["sleep 1; echo b"] == [0, "b\n", ""]
    assert got["files"] == {
        str(tmp_path / "present"): "4: ACTIVE\n",
        str(tmp_path / "absent"): None,
        str(tmp_path): None,
    }
    assert took < 1.9, f"the two 1 s commands ran one after the other ({took:.1f} s)"
