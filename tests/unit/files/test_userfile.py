"""The one reader of a file a user names (`files.userfile`): regular files only, refused beyond
their bound before a byte is read, and every failure a BadFile or Unavailable naming the file."""

from __future__ import annotations

import os

import pytest

from sparkfab.errors import Unavailable
from sparkfab.files import userfile
from sparkfab.files.userfile import BadFile


def test_a_fifo_a_folder_and_a_missing_file_are_named_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(BadFile, match="not a regular file"):
        userfile.read_bytes(tmp_path / "fifo", "plan")  # a FIFO would block the open
    with pytest.raises(BadFile, match="is a directory, not a plan"):
        userfile.read_bytes(tmp_path, "plan")
    with pytest.raises(Unavailable, match="no such plan"):
        userfile.read_bytes(tmp_path / "absent", "plan")


def test_a_file_over_its_bound_is_refused_whole(tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(10 << 40)  # a sparse file of 10 TiB: refused before it is read
    with pytest.raises(BadFile, match="larger than 8 MiB"):
        userfile.read_bytes(big, "run file")
    (tmp_path / "small").write_bytes(b"x" * 101)
    with pytest.raises(BadFile, match="larger than 100 bytes"):
        userfile.read_bytes(tmp_path / "small", "note", limit=100)


def test_text_and_json_failures_name_the_line(tmp_path):
    (tmp_path / "latin1").write_bytes(b"ok\nca\xe9\n")
    with pytest.raises(BadFile, match=r"line 2: not UTF-8 text \(byte 0xe9\)"):
        userfile.read_text(tmp_path / "latin1")
    (tmp_path / "bad.json").write_text('{"a": 1,\n "b": }')
    with pytest.raises(BadFile, match="not JSON \\(line 2"):
        userfile.read_json(tmp_path / "bad.json")
    with pytest.raises(BadFile, match="nested too deep"):
        userfile.loads("[" * 100_000 + "]" * 100_000, "answer")
    (tmp_path / "bom.json").write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert userfile.read_json(tmp_path / "bom.json") == {"a": 1}
