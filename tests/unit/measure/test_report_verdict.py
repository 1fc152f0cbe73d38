"""The report judges a difference between 200 and 100e against the run-to-run spread, and
prints a difference with its own sign."""

from __future__ import annotations

from sparkfab.measure.reporttext import _signed, verdict
from sparkfab.measure.runs import dist


def test_a_difference_inside_the_spread_is_noise_and_one_outside_is_not():
    at_200 = dist([1.20, 1.31, 1.25])
    assert verdict(at_200, dist([1.24, 1.28, 1.35])) == "within noise (the modes' ranges overlap)"
    assert verdict(at_200, dist([1.80, 1.86, 1.91])) == "outside the run-to-run spread"


def test_two_samples_make_no_spread():
    assert verdict(dist([1.2, 1.3]), dist([1.9, 2.0])) == "no verdict (n=2: at least 3 per mode)"
    assert verdict(dist([1.2, 1.3, 1.25]), None) == "-"


def test_a_decrease_is_printed_with_its_own_sign():
    assert _signed(-2.79) == "-2.79" and _signed(0.61) == "+0.61" and _signed(0.0) == "+0"


def test_a_cell_cannot_forge_a_row_or_a_section():
    """A model name or label read from a run file is text in the Markdown report: its pipes
    escaped, its line breaks spaces, and a huge value cut."""
    from sparkfab.measure.reporttext import MAX_CELL, _cell

    forged = "m\n\n## TTFT (forged)\n\n| test | r |\n|---|---|\n| P1 | 0.001 s (forged) |"
    cell = _cell(forged)
    assert "\n" not in cell and "| P1 |" not in cell and "\\| P1 \\|" in cell
    assert len(_cell("k=v, " * 100_000)) == MAX_CELL


def test_a_label_is_one_printable_line(cli, tmp_path):
    res = cli("bench", "--url", "http://127.0.0.1:9", "--model", "m", "--label", "a\n## forged", "-o", str(tmp_path))
    assert res.code == 2 and "--label" in res.err and "printable text on one line" in res.err


def test_the_ttft_axis_is_logarithmic_where_tests_span_more_than_ten_times():
    from sparkfab.measure.report import log_axis

    assert log_axis([1.2, 1.3, 98.0]) and not log_axis([1.2, 1.3, 9.0]) and not log_axis([])
