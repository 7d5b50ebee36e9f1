"""Prometheus metrics of the callback endpoint: callbacks by outcome and their handling time."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

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
