"""CLI verbs. Each module registers its verbs with `sparkfab.cli.command`."""

from sparkfab.commands import (
    bench_cmds,  # noqa: F401
    completion_cmd,  # noqa: F401
    deploy_cmds,  # noqa: F401
    discover_cmd,  # noqa: F401
    estimate_cmd,  # noqa: F401
    init_cmd,  # noqa: F401
    inventory_cmds,  # noqa: F401
    lab_cmds,  # noqa: F401
    preflight_cmd,  # noqa: F401
    render_cmds,  # noqa: F401
    sample_cmds,  # noqa: F401
    verify_cmd,  # noqa: F401
)
