#!/usr/bin/python
"""The documentation of the action `sparkfab_fabric_check` (action_plugins/): an action's
documentation lives in a module of its name, as Ansible's own `debug` keeps it."""

DOCUMENTATION = r"""
module: sparkfab_fabric_check
author: sparkfab developers (!UNKNOWN)
short_description: The netplan check and the files preview of one host in one turn
description:
  - Runs C(sparkfab_netplan) with C(stage=check), then (unless that fails) C(sparkfab_install)
    with C(preview=true); both ship with the roles (their C(library)).
  - The result is the netplan check's (C(msg) where it refuses) with the preview's under
    C(files), and C(pending) - whether the netplan converge or the install has anything to do.
  - Supports check mode and diff mode (handed to both modules).
options:
  bundle_text:
    description: The host's bundle (JSON), given to both modules; kept out of the logs.
    type: str
    required: true
  netplan:
    description: C(sparkfab_netplan)'s arguments (C(stage) and C(bundle_text) are set here).
    type: dict
    required: true
  files:
    description: C(sparkfab_install)'s arguments (C(preview) and C(bundle_text) are set here).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the host before any host changes
  sparkfab.fabric.sparkfab_fabric_check:
    bundle_text: "{{ sparkfab_files_bundle }}"
    netplan:
      netdevs: "{{ sparkfab_fabric_ifs }}"
      record_before: true
      addresses: "{{ sparkfab_addresses }}"
      mtu: 9000
    files:
      converge: true
  register: check
  failed_when: false
"""

RETURN = r"""
pending:
  description: Whether the netplan converge or the install has anything to do on this host.
  type: bool
  returned: always
files:
  description: The files preview (what C(sparkfab_install) would change), without its diff.
  type: dict
  returned: when the netplan check does not refuse
msg:
  description: The refusal, where the netplan check or the preview refuses.
  type: str
  returned: on refusal
"""
