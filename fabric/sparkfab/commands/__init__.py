"""CLI verbs. Each module registers its verbs with `sparkfab.cli.command`."""

from sparkfab.commands import inventory_cmds  # noqa: F401
from sparkfab.commands import render_cmds  # noqa: F401
from sparkfab.commands import lab_cmds  # noqa: F401
from sparkfab.commands import deploy_cmds  # noqa: F401
from sparkfab.commands import verify_cmd  # noqa: F401
from sparkfab.commands import estimate_cmd  # noqa: F401
from sparkfab.commands import sample_cmds  # noqa: F401
from sparkfab.commands import bench_cmds  # noqa: F401
from sparkfab.commands import discover_cmd  # noqa: F401
