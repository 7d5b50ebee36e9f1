"""What `synchronous=FULL` costs the embedded SQLite stores over `NORMAL` (issue 19 item 12).

Run: `python -m bench.sqlite_durability [--iterations N] [--jobs N]`.

Two numbers per setting, on a temp file of the machine's disk: the state store's
`transition_job` latency (one awaited call at a time, as `bench.state_transition`) and
the HUD's wall time per report written one report per commit (the in-process HUD's
path when callbacks arrive one at a time, the worst case for fsyncs). In WAL mode FULL
adds an fsync of the WAL at every commit; NORMAL syncs only at checkpoints.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import crcr.hud.db as hud_db
import crcr.stores.sqlite.db as state_db
from bench.hud_write import reports_of
from bench.state_transition import _bench_sqlite
from crcr.hud.write.writer import write_reports


def hud(jobs: int) -> float:
    """Wall µs per report, one report per commit, on a fresh SQLite results store."""
    reports = reports_of(jobs)
    with tempfile.TemporaryDirectory() as directory:
        engine = hud_db.create_results_engine(f"sqlite:///{Path(directory) / 'hud.db'}")
        try:
            hud_db.migrate(engine)
            now = datetime.now(UTC)
            started = time.perf_counter()
            for report in reports:
                write_reports(engine, [(report, now)])
            elapsed = time.perf_counter() - started
        finally:
            engine.dispose()
    return elapsed / len(reports) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--jobs", type=int, default=1000)
    args = parser.parse_args()
    print("| synchronous | transition median µs | transition p99 µs | HUD µs/report (1/commit) |")
    print("|---|---|---|---|")
    for level in ("NORMAL", "FULL"):
        state_db.SYNCHRONOUS = hud_db.SYNCHRONOUS = level
        median, p99 = asyncio.run(_bench_sqlite(args.iterations))
        per_report = hud(args.jobs)
        print(f"| {level} | {median:.0f} | {p99:.0f} | {per_report:.0f} |")


if __name__ == "__main__":
    main()
