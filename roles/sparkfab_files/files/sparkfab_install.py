#!/usr/bin/env python3
"""Install the files of a sparkfab bundle (JSON: path -> content, mode, kind) on this host.

One run per host instead of one Ansible module run per file. Writes are atomic (temporary
file in the same directory, then rename); unchanged files are left alone, so a second run
changes nothing. --check writes nothing; --diff reports unified diffs. Prints one JSON
object: {"changed": [paths], "kinds": [kinds changed], "diff": [unified diffs]}.
"""

import argparse
import difflib
import json
import os
import stat
import sys
import tempfile


def differs(path, content, mode):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return True, ""
    with open(path, encoding="utf-8", errors="replace") as f:
        old = f.read()
    return old != content or stat.S_IMODE(st.st_mode) != mode, old


def install(path, content, mode):
    d = os.path.dirname(path)
    os.makedirs(d, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".sparkfab-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(content)
    os.chmod(tmp, mode)
    os.chown(tmp, 0, 0)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("bundle")
    p.add_argument("--kinds", default="")
    p.add_argument("--check", action="store_true")
    p.add_argument("--diff", action="store_true")
    args = p.parse_args()
    with open(args.bundle, encoding="utf-8") as f:
        bundle = json.load(f)
    kinds = set(filter(None, args.kinds.split(",")))
    out = {"changed": [], "kinds": [], "diff": []}
    for path, spec in sorted(bundle["files"].items()):
        if kinds and spec["kind"] not in kinds:
            continue
        mode = int(spec["mode"], 8)
        changed, old = differs(path, spec["content"], mode)
        if not changed:
            continue
        out["changed"].append(path)
        if spec["kind"] not in out["kinds"]:
            out["kinds"].append(spec["kind"])
        if args.diff:
            out["diff"].append("".join(difflib.unified_diff(
                old.splitlines(True), spec["content"].splitlines(True), path + " (now)", path + " (planned)")))
        if not args.check:
            install(path, spec["content"], mode)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
