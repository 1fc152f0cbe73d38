"""Property tests of the readers this round added or hardened: the ansible.cfg reader, the
vault password file check, the variable filling of connection variables and the report's
Markdown cells, on any input: a clean refusal (UsageError, exit 2) or a value, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkfab.errors import SparkfabError
from sparkfab.inventory.ansible_child import fill_variables
from sparkfab.inventory.ansiblecfg import check_ansible_files, read_users_config
from sparkfab.measure.report.reporttext import MAX_CELL, _cell

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.binary(max_size=400))
def test_any_ansible_cfg_is_read_or_refused_by_name(tmp_path, data):
    cfg = tmp_path / "ansible.cfg"
    cfg.write_bytes(data)
    try:
        read_users_config({"ANSIBLE_CONFIG": str(cfg), "HOME": str(tmp_path)}, tmp_path)
    except SparkfabError as exc:
        assert str(cfg) in str(exc)


@SETTINGS
@given(st.binary(max_size=200), st.booleans())
def test_any_vault_password_file_is_taken_or_refused_by_name(tmp_path, data, huge):
    pw = tmp_path / "pw"
    pw.write_bytes(data * (60_000 if huge and data else 1))
    os.chmod(pw, 0o600)
    try:
        check_ansible_files({"ANSIBLE_VAULT_PASSWORD_FILE": str(pw), "HOME": str(tmp_path)}, Path(tmp_path))
    except SparkfabError as exc:
        assert str(pw) in str(exc)


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)


PLAIN = st.text(alphabet=st.characters(blacklist_characters="{}%#"), max_size=12)
PIECES = st.lists(st.one_of(PLAIN, NAMES.map(lambda n: "{{ " + n + " }}"), st.sampled_from(["{{", "}}", "{%", "|"])))


@SETTINGS
@given(st.dictionaries(NAMES, PLAIN, max_size=5), PIECES)
def test_filling_uses_variables_only(variables, pieces):
    """Any template of plain text, references and stray braces: filled exactly where every
    {{ }} names a defined variable (each replaced by its value), else left for Ansible (None)."""
    import re

    template = "".join(pieces)
    out = fill_variables(template, variables)
    reference = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
    rest = reference.sub("", template)
    names = reference.findall(template)
    fillable = not any(x in rest for x in ("{{", "}}", "{%")) and all(n in variables for n in names)
    assert (out is not None) == fillable
    if fillable:
        assert out == reference.sub(lambda m: variables[m.group(1)], template)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000))
def test_a_markdown_cell_is_one_line_without_a_bare_pipe(text):
    cell = _cell(text)
    assert "\n" not in cell and "\r" not in cell and len(cell) <= MAX_CELL
    assert "|" not in cell.replace("\\|", "")
