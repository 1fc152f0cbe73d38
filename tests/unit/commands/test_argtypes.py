"""Command-line values refused where they would do harm later: a URL that carries a login (it is
written into the run's files) is refused without repeating the password."""

from __future__ import annotations

import argparse

import pytest

from sparkfab.commands import argtypes as at


@pytest.mark.parametrize(
    "url", ["http://user:s3cret-pw@10.0.0.1:8000", "https://s3cret-pw@host", "http://:s3cret-pw@127.0.0.1:8000/v1"]
)
def test_a_url_with_a_login_is_refused_and_the_password_not_repeated(url):
    with pytest.raises(argparse.ArgumentTypeError) as exc:
        at.http_url(url)
    assert "s3cret-pw" not in str(exc.value) and "--api-key-env" in str(exc.value)


def test_a_plain_url_is_taken():
    assert at.http_url("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
