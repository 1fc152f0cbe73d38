"""The lab tier's one rule for running side by side: every test names the labs it boots with
`pytest.mark.xdist_group(<cluster>)`. scripts/test.sh runs the tier on two pytest-xdist workers
with `--dist loadgroup`, which keeps the tests of one cluster name on one worker; a lab is built
and torn down by its name, so two at once of one name would tear each other down. The mark is
checked where the lab boots (`tests.helpers.lab.lab`), so it cannot go stale. A lab test outside
this folder (tests/slow's installed lab cycle) carries the same mark and holds the same lock
(`tests.helpers.lab.holding`)."""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId

from tests.helpers import lab


@pytest.fixture(autouse=True)
def _declared_labs(request: pytest.FixtureRequest):
    lab.declared = frozenset(_group_names(request.node))
    yield
    lab.declared = None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The group in each lab test's id, as `--dist loadgroup` reads it (`<id>@<group>`).
    pytest-xdist 3.8 writes it to `item._nodeid`, which pytest 9 no longer reads (a node keeps
    its id in `_id`), so without this every test was its own group and two workers could take
    tests of one lab name at once (the lab's lock made the second wait)."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted(_group_names(item))
        if names and "@" not in item.nodeid and item.get_closest_marker("lab") is not None:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")  # type: ignore[attr-defined]


def _group_names(item: pytest.Item) -> set[str]:
    return {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
