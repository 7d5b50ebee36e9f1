"""Prometheus metrics of the downstream side: callbacks, HUD forwarding, the sweeper."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

CALLBACKS = Counter(
    "crcr_callbacks_total",
    "Callbacks by outcome (accepted, queued, duplicate, conflict, ignored, unauthorized, ...).",
    ["outcome"],
)
CALLBACK_SECONDS = Histogram(
    "crcr_callback_seconds",
    "Time to handle one callback, HUD forwarding included.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
HUD_FORWARDS = Counter(
    "crcr_hud_forwards_total",
    "HUD writes by result (delivered, rejected, queued, retried, dropped, stale).",
    ["result"],
)
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
