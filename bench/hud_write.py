"""The HUD's SQLite write path per report: CPU, and WAL pages each commit writes.

Run: `python -m bench.hud_write [--jobs N] [--batch 1 4 16 64] [--mixed] [--hold] [--tick S]
[--repeat R]`.

Each job reports `in_progress` then `completed` (an insert, then an update), written in
batches of the given size through `write_reports`, the path the in-process HUD takes
for every callback. By default every job's `in_progress` comes first, so a batch is all
inserts or all updates; `--mixed` writes each batch as half the next jobs' `in_progress`
and half the completions of the jobs the batch before started, as batches come under
`bench.callback_cpu`'s load (its clients each send a job's two callbacks in turn).
Every batch is written at one instant unless `--tick` moves the clock on by that many
seconds per batch: a row's activity time then changes with its completion, as it does
in service, and so does its entry in every index on that time.
Bodies are parsed before the clock starts. CPU is this process's
(SQLite's work included); WAL pages are counted from the WAL file's growth with
automatic checkpoints off, so they are exactly what the commits wrote. The callback
benchmark drives the same code under load; this one isolates it, so a change to the
write path shows up here without the load generator's and the VM's noise.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from datetime import UTC, datetime, timedelta
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


def mixed_batches(jobs: int, batch: int) -> list[list[JobReport]]:
    """Batches of half new jobs' `in_progress`, half the previous batch's jobs' `completed`."""
    half = max(1, batch // 2)
    started = [parse_result_body(results_body(index, "in_progress")) for index in range(jobs)]
    done = [parse_result_body(results_body(index, "completed")) for index in range(jobs)]
    batches = [
        started[start : start + half] + done[start - half : start] if start else started[:half]
        for start in range(0, jobs + half, half)
    ]
    if batch == 1:  # the same order, one report at a time
        return [[report] for reports in batches for report in reports]
    return batches


def measure(
    jobs: int, batch: int, *, mixed: bool = False, hold: bool = False, tick: float = 0.0
) -> tuple[float, float, float]:
    """(CPU µs, of which user µs, per report; WAL pages per report) writing `jobs` jobs in
    batches of `batch`.

    The user part is the Python and SQLite work; the rest (system) is mostly the commits'
    WAL writes and fsyncs, which swing with the disk and the machine's other work.
    `hold`: every batch on one connection, as the in-process HUD's writer keeps it
    (`db.held_writer`), rather than one from the pool per batch.
    """
    if mixed:
        batches = mixed_batches(jobs, batch)
    else:
        reports = reports_of(jobs)
        batches = [reports[start : start + batch] for start in range(0, len(reports), batch)]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "hud.db"
        engine = create_results_engine(f"sqlite:///{path}", manual_checkpoints=True)
        try:
            migrate(engine)
            now = datetime.now(UTC)
            held = None
            if hold:  # imported here: the bench also runs on trees without it
                from crcr.hud.db import held_writer

                held = held_writer(engine)
            wal = path.with_name("hud.db-wal")
            wal_before = wal.stat().st_size if wal.exists() else 0
            started, user = time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
            for number, reports in enumerate(batches):
                at = now + timedelta(seconds=tick * number)
                batch_of = [(report, at) for report in reports]
                if held is None:  # as a base without `held_writer` runs it
                    write_reports(engine, batch_of)
                else:
                    write_reports(engine, batch_of, connection=held)
            cpu = time.process_time() - started
            user = resource.getrusage(resource.RUSAGE_SELF).ru_utime - user
            pages = (wal.stat().st_size - wal_before) / WAL_FRAME_BYTES
            if held is not None:
                held.close()
        finally:
            engine.dispose()
    written = 2 * jobs
    return cpu / written * 1e6, user / written * 1e6, pages / written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument(
        "--mixed", action="store_true", help="batches of half inserts, half updates"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per batch size")
    parser.add_argument(
        "--tick", type=float, default=0.0, help="seconds the clock moves on per batch"
    )
    parser.add_argument(
        "--hold", action="store_true", help="one connection for every batch, as the HUD keeps"
    )
    args = parser.parse_args()
    print("| batch | CPU µs/report | of which user | WAL pages/report |")
    print("|---|---|---|---|")
    for batch in args.batch:
        for _ in range(args.repeat):
            cpu_us, user_us, pages = measure(
                args.jobs, batch, mixed=args.mixed, hold=args.hold, tick=args.tick
            )
            print(f"| {batch} | {cpu_us:.0f} | {user_us:.0f} | {pages:.2f} |")


if __name__ == "__main__":
    main()
