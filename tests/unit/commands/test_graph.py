"""`sparkfab graph`: the picture written where asked, its DOT text, and a verify result that is
not verify's refused by name."""

from __future__ import annotations

import shutil

import pytest

from sparkfab.commands import graph_cmd
from tests.conftest import REPO


def test_dot_text_on_stdout_and_svg_into_a_file(cli, tmp_path):
    res = cli("graph", str(REPO / "inventory/pair-1cable.yml"), "--format", "dot")
    assert res.code == 0 and res.out.startswith('digraph "pair1"')
    if shutil.which("dot"):
        out = tmp_path / "pair.svg"
        assert cli("graph", str(REPO / "inventory/pair-1cable.yml"), "-o", str(out)).code == 0
        assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()


@pytest.mark.parametrize("content,why", [("{", "not verify's JSON"), ('{"results": 3}', "no results list")])
def test_a_verify_file_that_is_not_verifys_is_named(cli, tmp_path, content, why):
    bad = tmp_path / "v.json"
    bad.write_text(content)
    res = cli("graph", str(REPO / "inventory/pair-1cable.yml"), "--verify", str(bad), "--format", "dot")
    assert res.code == 2 and why in res.err


def test_a_verify_result_colours_by_host_and_netdev(tmp_path):
    result = tmp_path / "v.json"
    result.write_text(
        '{"results": [{"host": "spark-a", "subject": "enp1s0f1np1 (p1)", "check": "mtu", "status": "fail"}]}'
    )
    assert graph_cmd._results(str(result))[("spark-a", "enp1s0f1np1")].failed == ("mtu",)
