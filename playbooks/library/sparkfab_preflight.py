#!/usr/bin/python
"""The documentation of the action `sparkfab_preflight` (action_plugins/): an action's
documentation lives in a module of its name, as Ansible's own `debug` keeps it."""

DOCUMENTATION = r"""
module: sparkfab_preflight
author: sparkfab developers (!UNKNOWN)
short_description: Every host has its rendered tree and meets the roles' argument specs
description:
  - Runs on the controller once (C(run_once)); contacts no host.
  - A host without C(sparkfab_files) or without its directory beside the inventory has no rendered tree.
  - Each host's variables that a role's spec names are checked against it (types, choices,
    required ones); variables the spec does not name are not looked at.
  - Fails with one message that names every host and every problem.
options:
  hosts:
    description: The hosts to check (the play's).
    type: list
    elements: str
    required: true
  tree:
    description: The rendered tree (the inventory's directory); without it the tree is not checked.
    type: path
  specs:
    description: C(meta/argument_specs.yml) files whose C(main) entry point the hosts' variables must meet.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Every host has its rendered tree and meets the roles' argument specs
  sparkfab.fabric.sparkfab_preflight:
    hosts: "{{ ansible_play_hosts_all }}"
    tree: "{{ inventory_dir }}"
    specs:
      - "{{ playbook_dir }}/../roles/sparkfab_files/meta/argument_specs.yml"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
msg:
  description: How many hosts were checked, or every problem of every host, one per line.
  type: str
  returned: always
"""
