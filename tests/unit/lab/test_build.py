"""A lab larger than root's inotify limit allows is refused before a machine starts: past the
limit a Spark's systemd stops at once (`Failed to allocate manager object: Too many open files`,
seen with 32 Sparks under the default of 128)."""

from __future__ import annotations

import pytest

from sparkfab.errors import LabError
from sparkfab.lab import build


def test_a_lab_beyond_roots_inotify_limit_is_refused_with_the_sysctl_to_raise(tmp_path, monkeypatch):
    limit = tmp_path / "max_user_instances"
    limit.write_text("128\n")
    monkeypatch.setattr(build, "_INOTIFY_LIMIT", limit)
    monkeypatch.setattr(build, "_link", lambda fd: "")  # nothing else holds one
    build.check_inotify(16)  # 16 x 8 = 128: it fits
    with pytest.raises(LabError, match=r"32 machines needs about 256 inotify.*root may hold 128.*sysctl fs\.inotify"):
        build.check_inotify(32)


def test_an_unreadable_limit_is_not_a_reason_to_refuse(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "_INOTIFY_LIMIT", tmp_path / "absent")
    build.check_inotify(1000)


@pytest.mark.parametrize("text", ["abc", "0", "-5", "1e9", "nan"])
def test_a_boot_bound_that_is_not_seconds_is_named(monkeypatch, text):
    from sparkfab.lab import boot

    monkeypatch.setenv("SPARKFAB_LAB_BOOT_S", text)
    with pytest.raises(LabError, match="SPARKFAB_LAB_BOOT_S"):
        boot.boot_s()


def test_the_boot_bound_is_the_environments_or_three_minutes(monkeypatch):
    from sparkfab.lab import boot

    monkeypatch.delenv("SPARKFAB_LAB_BOOT_S", raising=False)
    assert boot.boot_s() == 180.0
    monkeypatch.setenv("SPARKFAB_LAB_BOOT_S", "900")
    assert boot.boot_s() == 900.0
