"""A file output named as a directory is refused, not written beside the folder meant."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("verb", [["init", "pair"], ["schema"]])
def test_a_file_output_written_as_a_directory_is_refused(cli, tmp_path, verb):
    """`init pair -o new.yml/` wrote a file new.yml (Path drops the slash): refused now."""
    res = cli(*verb, "-o", f"{tmp_path}/new.yml/")
    assert res.code == 2 and "names a directory (its trailing /)" in res.err
    assert not (tmp_path / "new.yml").exists()
