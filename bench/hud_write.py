"""The HUD's SQLite write path per report: CPU, and WAL pages each commit writes.

Run: `python -m bench.hud_write [--jobs N] [--batch 1 4 16 64]`.

Each job reports `in_progress` then `completed` (an insert, then an update), written in
batches of the given size through `write_reports`, the path the in-process HUD takes
for every callback. Bodies are parsed before the clock starts. CPU is this process's
(SQLite's work included); WAL pages are counted from the WAL file's growth with
automatic checkpoints off, so they are exactly what the commits wrote. The callback
benchmark drives the same code under load; this one isolates it, so a change to the
write path shows up here without the load generator's and the VM's noise.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.hud_store import results_body
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.write.ingest import parse_result_body
from crcr.hud.write.report import JobReport
from crcr.hud.write.writer import write_reports

WAL_FRAME_BYTES = 24 + 4096  # frame header + a page of SQLite's default size


def reports_of(jobs: int) -> list[JobReport]:
    """Every job's `in_progress` report, then every job's `completed` one."""
    return [
        parse_result_body(results_body(index, status))
        for status in ("in_progress", "completed")
        for index in range(jobs)
    ]


def measure(jobs: int, batch: int) -> tuple[float, float]:
    """(CPU µs per report, WAL pages per report) writing `jobs` jobs in batches of `batch`."""
    reports = reports_of(jobs)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "hud.db"
        engine = create_results_engine(f"sqlite:///{path}", manual_checkpoints=True)
        try:
            migrate(engine)
            now = datetime.now(UTC)
            wal = path.with_name("hud.db-wal")
            wal_before = wal.stat().st_size if wal.exists() else 0
            started = time.process_time()
            for start in range(0, len(reports), batch):
                write_reports(engine, [(report, now) for report in reports[start : start + batch]])
            cpu = time.process_time() - started
            pages = (wal.stat().st_size - wal_before) / WAL_FRAME_BYTES
        finally:
            engine.dispose()
    return cpu / len(reports) * 1e6, pages / len(reports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 4, 16, 64])
    args = parser.parse_args()
    print("| batch | CPU µs/report | WAL pages/report |")
    print("|---|---|---|")
    for batch in args.batch:
        cpu_us, pages = measure(args.jobs, batch)
        print(f"| {batch} | {cpu_us:.0f} | {pages:.2f} |")


if __name__ == "__main__":
    main()
