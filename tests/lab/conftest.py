"""The lab tier's one rule for running side by side: every test names the labs it boots with
`pytest.mark.xdist_group(<cluster>)`. scripts/test.sh runs the tier on two pytest-xdist workers
with `--dist loadgroup`, which keeps the tests of one cluster name on one worker; a lab is built
and torn down by its name, so two at once of one name would tear each other down. The mark is
checked where the lab boots (`tests.helpers.lab.lab`), so it cannot go stale."""

from __future__ import annotations

import pytest

from tests.helpers import lab


@pytest.fixture(autouse=True)
def _declared_labs(request: pytest.FixtureRequest):
    names = set()
    for mark in request.node.iter_markers("xdist_group"):
        names.add(mark.kwargs.get("name", mark.args[0] if mark.args else ""))
    lab.declared = frozenset(names)
    yield
    lab.declared = None
