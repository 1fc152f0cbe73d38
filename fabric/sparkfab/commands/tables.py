"""Tables shared by verbs that print a `Report` (verify, preflight)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sparkfab.errors import readable
from sparkfab.verify.result import FAIL, PASS, SKIP, WARN, Report


def print_report(report: Report, show_all: bool, verb: str = "verify") -> None:
    """Failed rows (and with preflight also warnings and "not in lab"), or every row with --all."""
    console = Console(width=170)
    d = report.to_dict()
    t = Table(title=f"{verb} {report.cluster} (link {report.link_speed})")
    for col in ("check", "host", "subject", "expected", "actual", "status", "detail"):
        t.add_column(col, overflow="fold")
    for r in report.results:
        if r.status == FAIL or show_all or (verb != "verify" and r.status != PASS):
            color = {PASS: "green", FAIL: "red", SKIP: "yellow", WARN: "magenta"}[r.status]
            # what hosts answered is text, never markup ("[/]" in a message would break the table),
            # and a control character a neighbour announced is shown, not obeyed (errors.readable)
            cells = (Text(readable(str(x))) for x in (r.check, r.host, r.subject, r.expected, r.actual))
            t.add_row(*cells, Text(r.status, style=color), Text(readable(str(r.detail))))
    if t.row_count:
        console.print(t)
    for name, c in (report.collective or {}).items():
        console.print(f"collective {name} ({c.backend}, {c.world_size} ranks): {'correct' if c.ok else 'FAILED'}")
        ct = Table()
        for col in ("bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
            ct.add_column(col, justify="right")
        for row in c.sweep:
            ct.add_row(str(row.bytes), f"{row.time_us:.1f}", f"{row.algbw_GBps:.4f}", f"{row.busbw_GBps:.4f}")
        console.print(ct)
    c = d["counts"]
    console.print(
        f"{'PASS' if report.ok else 'FAIL'}: {c['pass']} passed, {c['fail']} failed, {c['skip']} skipped"
        + (f", {c['warn']} warning(s)" if c.get("warn") else "")
        + f" in {report.timing.get('total_s', 0):.1f} s"
    )
