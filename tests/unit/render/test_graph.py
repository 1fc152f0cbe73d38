"""The cluster's picture: DOT that Graphviz itself lays out for every example, each Spark and
cable in it, and a cable coloured by what verify said of its netdevs."""

from __future__ import annotations

import html
import re
import shutil
import subprocess

import pytest

from sparkfab.render import graph
from sparkfab.resolve import load_plan
from tests.conftest import EXAMPLES

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz (scripts/setup.sh installs it)")


@needs_dot
@pytest.mark.parametrize("inventory", EXAMPLES, ids=lambda p: p.stem)
def test_graphviz_draws_every_example_with_every_spark_and_cable(inventory):
    plan = load_plan(str(inventory))
    res = subprocess.run(["dot", "-Tsvg"], input=graph.dot(plan), capture_output=True, text=True, check=False)
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr
    svg = html.unescape(res.stdout)  # Graphviz writes a hyphen as &#45;
    assert all(f">{h.name}<" in svg for h in plan.hosts)
    cables = {i.cable for h in plan.hosts for i in h.ifaces}
    assert {int(n) for n in re.findall(r"cables\[(\d+)\]", svg)} == cables


def test_a_cable_is_red_with_its_failed_checks_green_when_all_passed_grey_unchecked():
    plan = load_plan("inventory/pair-2cables.yml")
    rows = [
        {"host": "spark-a", "subject": "enp1s0f0np0 (p0)", "check": "cabling", "status": "fail"},
        {"host": "spark-a", "subject": "enp1s0f0np0", "check": "carrier", "status": "fail"},
        {"host": "spark-a", "subject": "enp1s0f1np1 (p1)", "check": "cabling", "status": "pass"},
        {"host": "spark-a", "subject": "lldpd", "check": "cabling", "status": "fail"},  # no netdev: no edge
    ]
    text = graph.dot(plan, graph.verdicts(rows))
    edges = [line for line in text.splitlines() if "->" in line]
    p0 = next(e for e in edges if '"spark-a":"p0"' in e or '"spark-b":"p0"' in e)
    p1 = next(e for e in edges if '"spark-a":"p1"' in e or '"spark-b":"p1"' in e)
    assert graph.FAIL_COLOUR in p0 and "FAILED: cabling, carrier" in p0
    assert graph.PASS_COLOUR in p1
    assert graph.NONE_COLOUR in graph.dot(plan)


def test_names_are_markup_escaped():
    assert graph._e('a<b>&"c') == "a&lt;b&gt;&amp;&quot;c"
