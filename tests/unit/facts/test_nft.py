"""The nftables facts: sparkfab's table loaded or not, and the ruleset as nft prints it (this
machine's own, read only, where nft is installed)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sparkfab.facts.nft import RULESET, TABLE, Ruleset
from tests.doubles.host import Answer, FakeHost


def test_the_table_is_loaded_when_nft_lists_it():
    assert TABLE.of(FakeHost(answers={TABLE.command(): Answer(0, "table inet sparkfab {}\n")}))
    assert not TABLE.of(FakeHost(answers={TABLE.command(): Answer(1, "", "No such file or directory\n")}))


def test_a_ruleset_and_one_that_cannot_be_read():
    doc = '{"nftables": [{"metainfo": {"json_schema_version": 1}}, {"table": {"family": "inet", "name": "x"}}]}'
    got = RULESET.of(FakeHost(answers={RULESET.command(): Answer(0, doc)}))
    assert got.document["nftables"][1]["table"]["name"] == "x" and got.error == ""
    assert RULESET.parse(Answer(1, "", "Operation not permitted\n")) == Ruleset({}, "Operation not permitted\n")
    assert RULESET.parse(Answer(0, "[]")).document == {}


@pytest.mark.skipif(shutil.which("nft") is None, reason="nft is not installed")
def test_this_machines_ruleset_reads():
    out = subprocess.run(["sh", "-c", RULESET.command()], capture_output=True, text=True, check=False)
    got = RULESET.parse(Answer(out.returncode, out.stdout, out.stderr))
    assert (got.document.get("nftables") is not None) if out.returncode == 0 else got.error
