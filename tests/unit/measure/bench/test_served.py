"""The served checkpoint's config.json kept in a bench run (`measure.bench.served`): read on the
serving host where the server names it, never followed here."""

from __future__ import annotations

import json


def test_bench_keeps_the_checkpoints_config_read_on_the_serving_host(tmp_path):
    """With the inventory's connection, the served checkpoint's config.json is read on the host
    that serves it and kept in the run, so that report --estimate finds it after a lab is gone."""
    from sparkfab.measure.bench import served
    from sparkfab.measure.bench.rundir import RunDir

    asked: list[str] = []
    config = {"model_type": "tiny", "hidden_size": 1024}

    def remote_read(path: str) -> str:
        asked.append(path)
        return json.dumps(config)

    run = RunDir(tmp_path)
    served.keep_config(run, "/srv/models/tiny", "sparkfab-lab", remote_read)
    assert asked == ["/srv/models/tiny/config.json"]
    assert json.loads((tmp_path / RunDir.MODEL_CONFIG).read_text()) == config
    assert served.config_of(run, "sparkfab-lab") == tmp_path / RunDir.MODEL_CONFIG
