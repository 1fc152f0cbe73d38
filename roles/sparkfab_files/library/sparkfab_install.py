#!/usr/bin/python3
"""Ansible module: install the files of a sparkfab bundle on this host in one run."""

import json
import os
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: sparkfab_install
short_description: Install the files of a sparkfab bundle (path -> content, mode, kind) in one run
description:
  - One module run per host instead of one C(copy) per file.
  - Writes are atomic (temporary file in the same directory, then rename) and owned by root.
  - Files whose content and mode already match are left alone, so a second run changes nothing.
  - Supports check mode and diff mode.
options:
  bundle:
    description: Path on the host of the bundle, JSON C({"files": {path: {content, mode, kind}}}).
    type: path
  bundle_text:
    description:
      - The bundle itself, as JSON text (from the controller, e.g. a C(file) lookup), instead of C(bundle).
      - Kept out of the logs and the run's events (its files are in the rendered tree).
    type: str
  kinds:
    description: Install only files of these kinds (all when empty).
    type: list
    elements: str
    default: []
"""

RETURN = r"""
files:
  description: Paths that were (or in check mode would be) written.
  type: list
  returned: always
kinds:
  description: Kinds of the files in C(files), in first-seen order.
  type: list
  returned: always
"""


def current(path):
    """(content, mode) of the file at path, or (None, None) when it does not exist."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read(), stat.S_IMODE(st.st_mode)


def install(path, content, mode):
    d = os.path.dirname(path)
    os.makedirs(d, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".sparkfab-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        os.chmod(tmp, mode)
        os.chown(tmp, 0, 0)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def changes(bundle, kinds, with_diff):
    """[(path, spec, diff or None)] for the files whose content or mode differ from the bundle."""
    out = []
    for path, spec in sorted(bundle["files"].items()):
        if kinds and spec["kind"] not in kinds:
            continue
        mode = int(spec["mode"], 8)
        old, old_mode = current(path)
        if old == spec["content"] and old_mode == mode:
            continue
        diff = None
        if with_diff:
            before, after = old or "", spec["content"]
            if old == spec["content"]:
                before, after = f"mode {old_mode:04o}\n", f"mode {mode:04o}\n"
            diff = {"before_header": path, "after_header": path, "before": before, "after": after}
        out.append((path, spec, diff))
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "bundle": {"type": "path"},
            "bundle_text": {"type": "str", "no_log": True},
            "kinds": {"type": "list", "elements": "str", "default": []},
        },
        required_one_of=[["bundle", "bundle_text"]],
        mutually_exclusive=[["bundle", "bundle_text"]],
        supports_check_mode=True,
    )
    bundle_path = module.params["bundle"]
    try:
        if bundle_path is None:
            bundle = json.loads(module.params["bundle_text"])
        else:
            with open(bundle_path, encoding="utf-8") as f:
                bundle = json.load(f)
    except (OSError, ValueError) as e:
        module.fail_json(msg=f"cannot read bundle {bundle_path or '(text)'}: {e}")
    todo = changes(bundle, set(module.params["kinds"]), module._diff)
    written, kinds = [], []
    for path, spec, _ in todo:
        if not module.check_mode:
            try:
                install(path, spec["content"], int(spec["mode"], 8))
            except OSError as e:
                module.fail_json(msg=f"cannot write {path}: {e}", files=written, kinds=kinds)
        written.append(path)
        if spec["kind"] not in kinds:
            kinds.append(spec["kind"])
    result = {"changed": bool(written), "files": written, "kinds": kinds}
    if module._diff:
        result["diff"] = [d for _, _, d in todo]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
