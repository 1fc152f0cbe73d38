"""The one ssh_config writer (`render.sshconfig`), read by its consumer: `ssh -G` says what ssh
would use for a host, without connecting."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sparkfab.render.sshconfig import Block, multiplexed, ssh_config


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's client")
def test_ssh_reads_the_blocks_and_the_multiplexing_as_written(tmp_path):
    own = tmp_path / "own_config"
    own.write_text("Host *\n  Compression yes\n")
    blocks = [Block(("spark-a",), ("HostName 10.0.0.21", "User ops", "Port 2222", *multiplexed(tmp_path / "cm")))]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(ssh_config("made by a test", blocks, include=own))
    res = subprocess.run(["ssh", "-G", "-F", str(cfg), "spark-a"], capture_output=True, text=True, check=True)
    seen = dict(line.split(" ", 1) for line in res.stdout.splitlines() if " " in line)
    assert (seen["hostname"], seen["user"], seen["port"]) == ("10.0.0.21", "ops", "2222")
    assert seen["controlmaster"] == "auto" and seen["controlpersist"] == "120"
    assert seen["controlpath"].startswith(f"{tmp_path}/cm/cm-")
    assert (seen["serveraliveinterval"], seen["serveralivecountmax"], seen["connecttimeout"]) == ("5", "6", "10")
    assert seen["compression"] == "yes"  # the user's own file, included for every host
