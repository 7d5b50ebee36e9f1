"""Prometheus metrics of the callback endpoint: callbacks by outcome and their handling time."""

from __future__ import annotations

from typing import Any

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

_BY_OUTCOME: dict[str, Any] = {}


def count_callback(outcome: str) -> None:
    """`CALLBACKS` by `outcome`, its labelled child looked up once per outcome: `labels()`
    takes a lock and builds a key on every call, on the hot path of every callback."""
    child = _BY_OUTCOME.get(outcome)
    if child is None:
        child = _BY_OUTCOME[outcome] = CALLBACKS.labels(outcome=outcome)
    child.inc()
