"""A bench run's directory: what it holds, and the one place each of its files is read and written.

    <run>/
      run.json             what was run (URL, model, plan, rounds, seed, the prompts' salt, the
                           engine, the inventory's context, the counters, the clock anchor);
                           written first, once, when the server has answered
      requests.jsonl       one record per request as it ends (appended, flushed and synced: a
                           killed bench loses nothing it finished), and one `kind: traffic`
                           record per request of a sampled round with its prefill and decode
                           windows' bytes
      traffic/<test>-r<round>.smp
                           the RDMA counters of a round at 1 ms (the sampler's own format)
      server.json          each test's server-side figures from /metrics, read before and after
                           its measured rounds ({} for a test whose server had no /metrics)
      result_<test>.json   one `vllm bench serve --save-result` document per test
      summary.json         the per-test summary, computed from requests.jsonl at the end
      model-config.json    the served checkpoint's config.json, where it could be read
      .bench.lock          held by the one bench writing the directory

`bench` writes a run through a `RunDir`; `report`, `bench --resume` and the lab's analysis read
it back through the same `RunDir`, each file by one rule: a file of another shape is a `BadFile`
naming it, except requests.jsonl, whose torn or foreign lines are skipped and counted (a killed
bench leaves half a line). What a record holds is `records`' table.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkfab import lock
from sparkfab.errors import UsageError
from sparkfab.files import userfile
from sparkfab.measure.bench import records

#: a bench of thousands of requests writes a few MB; chunk timings included, well under this
MAX_REQUESTS_BYTES = 1 << 30


@dataclass(frozen=True)
class RunDir:
    """A bench run's directory (`path`), and each of its files by name."""

    path: Path

    RUN = "run.json"
    REQUESTS = "requests.jsonl"
    SERVER = "server.json"
    SUMMARY = "summary.json"
    MODEL_CONFIG = "model-config.json"
    LOCK = ".bench.lock"
    TRAFFIC = "traffic"

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    # -- what the directory is ---------------------------------------------------------------

    def holds_a_run(self) -> bool:
        return (self / self.RUN).is_file()

    def written(self) -> list[str]:
        """The names in the directory other than its lock: a new run starts only where this is empty."""
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir() if p.name != self.LOCK)

    @contextmanager
    def held(self) -> Iterator[None]:
        """The directory for one bench at a time (`sparkfab.lock`)."""
        with lock.held(self.path, f"run directory {self.path}", "bench", name=self.LOCK):
            yield

    # -- run.json ----------------------------------------------------------------------------

    def write_meta(self, meta: dict[str, Any]) -> None:
        (self / self.RUN).write_text(json.dumps(meta, indent=2))

    def meta(self) -> dict[str, Any]:
        """run.json as bench writes it: a JSON object whose every field the report reads has the
        shape bench gives it (`records.check_meta`); else a UsageError naming the file."""
        path = self / self.RUN
        try:
            meta = userfile.loads(userfile.read_bytes(path, self.RUN).decode("utf-8"), path)
        except UnicodeDecodeError:
            raise UsageError(f"{path}: not UTF-8 text") from None
        if not isinstance(meta, dict):
            raise UsageError(f"{path}: not a JSON object")
        records.check_meta(meta, path)
        return meta

    # -- requests.jsonl ----------------------------------------------------------------------

    def append(self, *recs: dict[str, Any]) -> None:
        """Append records, flushed and synced before this returns."""
        with (self / self.REQUESTS).open("a") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))
            f.flush()
            os.fsync(f.fileno())

    def lines(self) -> tuple[list[dict[str, Any]], int]:
        """The well-formed records of requests.jsonl (`records.well_formed`), and how many lines
        were skipped: torn (a killed bench leaves half a line), not JSON, or of another shape."""
        path = self / self.REQUESTS
        if not path.exists():
            return [], 0
        out, skipped = [], 0
        data = userfile.read_bytes(path, self.REQUESTS, MAX_REQUESTS_BYTES)
        for line in data.decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                skipped += 1
                continue
            if records.well_formed(rec):
                out.append(rec)
            else:
                skipped += 1
        return out, skipped

    def requests(self) -> list[dict[str, Any]]:
        """Each request's record with its traffic folded in (`records.merge`)."""
        return records.merge(self.lines()[0])

    def keep_only(self, recs: list[dict[str, Any]]) -> None:
        """requests.jsonl rewritten to hold `recs` alone (a resumed run drops its cut rounds),
        replaced whole."""
        path = self / self.REQUESTS
        tmp = path.with_name(f".{self.REQUESTS}.resume")
        tmp.write_text("".join(json.dumps(x) + "\n" for x in recs))
        tmp.replace(path)

    # -- traffic/ ----------------------------------------------------------------------------

    def samples(self, test: str, rnd: int) -> Path:
        """Where a round's counter samples go (its folder made)."""
        (self / self.TRAFFIC).mkdir(exist_ok=True)
        return self.path / self.TRAFFIC / f"{test}-r{rnd}.smp"

    def sample_file(self, name: str) -> Path:
        """A sample file a record names (`records`' table holds the name to one inside traffic/)."""
        return self.path / self.TRAFFIC / name

    # -- server.json -------------------------------------------------------------------------

    def server(self) -> dict[str, dict[str, Any]]:
        """server.json as bench writes it, each test's server-side figures ({} before the first
        test ends); any other shape is a BadFile naming it."""
        path = self / self.SERVER
        if not path.exists():
            return {}
        data = userfile.read_json(path, self.SERVER)
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise userfile.BadFile(path, "not the mapping of each test to its server-side figures that bench writes")
        return data

    def write_server(self, test: str, figures: dict[str, Any]) -> None:
        """One test's server-side figures into server.json, replaced whole."""
        data = self.server()
        data[test] = figures
        path = self / self.SERVER
        tmp = path.with_name(f".{self.SERVER}.tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(path)

    # -- the results -------------------------------------------------------------------------

    def write_result(self, test: str, doc: dict[str, Any]) -> None:
        (self / f"result_{test}.json").write_text(json.dumps(doc, indent=2))

    def write_summary(self, summary: dict[str, Any]) -> None:
        (self / self.SUMMARY).write_text(json.dumps(summary, indent=2))

    # -- model-config.json -------------------------------------------------------------------

    def keep_model_config(self, text: str) -> None:
        (self / self.MODEL_CONFIG).write_text(text)

    def model_config(self) -> Path | None:
        kept = self / self.MODEL_CONFIG
        return kept if kept.is_file() else None
