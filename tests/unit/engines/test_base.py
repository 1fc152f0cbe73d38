"""Recipe flags as an engine's argv: a value is never read as a flag, whatever it holds."""

from __future__ import annotations

import argparse

from hypothesis import given
from hypothesis import strategies as st

from sparkfab.engines import ENGINES
from sparkfab.engines.base import flag_argv
from sparkfab.engines.flags import value_problem


def _parser() -> argparse.ArgumentParser:
    """Two options as vLLM's parser declares them (argparse, the parser both engines use)."""
    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--served-model-name")
    p.add_argument("--headless", action="store_true")
    return p


@given(st.text(min_size=1).filter(lambda t: "\x00" not in t))
def test_any_value_reaches_the_parser_as_the_value(value: str):
    args = _parser().parse_args(flag_argv({"served-model-name": value}))
    assert args.served_model_name == value and args.headless is False


def test_a_value_that_is_a_flag_of_the_engine_is_refused_at_validate():
    vllm = ENGINES["vllm"]
    why = value_problem(vllm, "served-model-name", "--headless")
    assert why is not None and "'--headless' is a flag of vllm" in why
    assert value_problem(vllm, "served-model-name", "-my-model") is None  # a name that starts with '-'
