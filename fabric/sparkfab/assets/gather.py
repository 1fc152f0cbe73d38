"""Gather a host's facts in one round trip: run every command asked side by side (so the jumbo
pings of all ports take as long as one) and read every file asked, from the host it runs on, with
its own python3 and standard library only. Run by `facts/gather.py`'s `prefetch`.

Its one argument is JSON: {"commands": [shell command], "files": [path]}.
Output: one JSON object {"commands": {command: [rc, stdout, stderr]}, "files": {path: text or
null}}; a file that exists but cannot be read (sysfs answers EINVAL for an unused GID slot) is
null, as an absent one.
"""

from __future__ import annotations

import json
import subprocess
import sys


def main(argv: list[str]) -> None:
    ask = json.loads(argv[1])
    procs = {
        c: subprocess.Popen(c, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for c in ask["commands"]
    }
    files: dict[str, str | None] = {}
    for path in ask["files"]:
        try:
            with open(path, "rb") as f:
                files[path] = f.read().decode("utf-8", "replace")
        except OSError:
            files[path] = None
    done = {}
    for c, p in procs.items():
        out, err = p.communicate()
        done[c] = [p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")]
    sys.stdout.write(json.dumps({"commands": done, "files": files}))


if __name__ == "__main__":
    main(sys.argv)
