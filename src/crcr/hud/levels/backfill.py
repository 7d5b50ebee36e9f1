"""Build the level rollups and history from the job rows already stored.

For migration 0004 (an operator upgrading over existing results) and for the benchmark's
bulk loader. The counted jobs, their daily sums and the history are set-based SQL that
SQLite and PostgreSQL both run; runs' end-to-end times are computed by the write path's
own function, so a backfilled run and a written one agree to the millisecond.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from crcr.hud.models import LEVEL_RUNS
from crcr.hud.write.level_counted import OVERRUN_MS, run_row
from crcr.hud.write.level_statements import run_facts

_CHUNK = 20_000

_COUNTED_JOBS = """
INSERT INTO hud_level_jobs (downstream_repo, run_id, job_name, run_attempt, job_key, day,
    conclusion, queue_ms, execution_ms, started_at, completed_at)
SELECT downstream_repo, run_id, job_name, run_attempt, job_key, day, conclusion,
    CAST(ROUND(queue_time * 1000) AS BIGINT), CAST(ROUND(execution_time * 1000) AS BIGINT),
    started_at, completed_at
FROM (
    SELECT hud_jobs.*, ROW_NUMBER() OVER (
        PARTITION BY downstream_repo, run_id, job_name
        ORDER BY run_attempt DESC, job_key DESC) AS attempt_rank
    FROM hud_jobs WHERE status = 'completed' AND event_type = 'pull_request'
) AS ranked
WHERE attempt_rank = 1
"""

_LEVEL_DAILY = """
INSERT INTO hud_level_daily (downstream_repo, day, jobs, success, timed_out, overrun,
    queue_ms_sum, queue_n)
SELECT downstream_repo, day, COUNT(*),
    SUM(CASE WHEN conclusion = 'success' THEN 1 ELSE 0 END),
    SUM(CASE WHEN conclusion = 'timed_out' THEN 1 ELSE 0 END),
    SUM(CASE WHEN COALESCE(conclusion, '') <> 'timed_out'
             AND COALESCE(execution_ms, 0) > :overrun_ms THEN 1 ELSE 0 END),
    COALESCE(SUM(queue_ms), 0), COUNT(queue_ms)
FROM hud_level_jobs GROUP BY downstream_repo, day
"""

_HISTORY = """
INSERT INTO hud_level_history (repo, level, first_seen_at, last_seen_at)
SELECT downstream_repo, downstream_repo_level, MIN(received_at), MAX(updated_at)
FROM hud_jobs WHERE downstream_repo_level IS NOT NULL
GROUP BY downstream_repo, downstream_repo_level
"""

_E2E_BUCKETS = """
INSERT INTO hud_level_e2e_buckets (downstream_repo, day, bucket, count)
SELECT downstream_repo, day, e2e_bucket, COUNT(*) FROM hud_level_runs
WHERE e2e_bucket IS NOT NULL GROUP BY downstream_repo, day, e2e_bucket
"""


def backfill_levels(connection: Connection) -> None:
    """Fill the (empty) level tables from `hud_jobs`; the caller holds the transaction."""
    connection.execute(text(_COUNTED_JOBS))
    connection.execute(text(_LEVEL_DAILY), {"overrun_ms": OVERRUN_MS})
    connection.execute(text(_HISTORY))
    # Streamed in chunks: at 10 M job rows there are a million runs.
    runs = connection.execute(run_facts().execution_options(yield_per=_CHUNK))
    for chunk in runs.mappings().partitions():
        connection.execute(LEVEL_RUNS.insert(), [run_row(dict(row)) for row in chunk])
    connection.execute(text(_E2E_BUCKETS))
