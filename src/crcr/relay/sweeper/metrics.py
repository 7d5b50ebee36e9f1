"""Prometheus metrics of the sweeper: overdue jobs it finalised, and the retry queues' depth."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

ZOMBIES_FINALISED = Counter(
    "crcr_zombies_finalised_total", "In-progress jobs the sweeper finalised as timed_out."
)
COMPLETIONS_REDONE = Counter(
    "crcr_completions_redone_total",
    "Completed jobs whose HUD row and hooks the sweeper redid (their relay died first).",
)
JOB_FAILURES = Counter(
    "crcr_sweeper_job_failures_total",
    "Overdue jobs the sweeper failed to finalise or redo (each logged with its job key).",
)
# Every worker reads the same shared queues: across workers, the latest reading counts.
QUEUE_DEPTH = Gauge(
    "crcr_queue_depth",
    "Items waiting in a retry queue.",
    ["queue"],
    multiprocess_mode="mostrecent",
)
QUEUE_OLDEST_AGE = Gauge(
    "crcr_queue_oldest_age_seconds",
    "Age of the oldest item in a retry queue.",
    ["queue"],
    multiprocess_mode="mostrecent",
)
