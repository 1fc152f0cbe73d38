"""An inventory's YAML read as Ansible reads it (`files.yamlload`): YAML 1.1 through libyaml, with
each key's line, an unknown tag kept as text with its tag, and the bounds on what it expands."""

from __future__ import annotations

import pytest

from sparkfab.files import yamlload
from sparkfab.files.yamlload import YamlProblem


def test_keys_and_items_keep_their_lines_and_yaml_1_1_scalars_read_as_ansible_reads_them():
    doc = yamlload.parse("all:\n  vars:\n    mtu: 9000\n    jumbo: yes\n    hosts:\n      - a\n      - b\n")
    assert doc["all"]["vars"]["mtu"] == 9000 and doc["all"]["vars"]["jumbo"] is True  # YAML 1.1's yes
    assert doc["all"].lc.key("vars") == (1, 0) and doc["all"]["vars"]["hosts"].lc.item(1) == (6, 0)


def test_an_ansible_tag_stays_text_with_its_tag():
    doc = yamlload.parse("password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\nname: !unsafe '{{ x }}'\n")
    assert isinstance(doc["password"], yamlload.Tagged) and doc["password"].tag == "!vault"
    assert doc["name"] == "{{ x }}" and doc["name"].tag == "!unsafe"
    assert "!vault" in yamlload.dump({"password": doc["password"]})  # written back with its tag


def test_an_alias_bomb_is_refused_not_expanded():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    with pytest.raises(YamlProblem, match="alias"):
        yamlload.parse(bomb)


def test_broken_yaml_names_its_line(tmp_path):
    with pytest.raises(YamlProblem) as exc:
        yamlload.parse("all:\n  vars: [1, 2\n  hosts: {}\n")
    assert exc.value.line is not None and exc.value.message.startswith("not valid YAML")
    (tmp_path / "nul.yml").write_bytes(b"a: 1\nb: \x00\n")
    with pytest.raises(YamlProblem, match="NUL byte") as exc:
        yamlload.read_text(tmp_path / "nul.yml")
    assert exc.value.line == 2
