"""Prometheus metrics of HUD forwarding, shared by the callback's writes and the queue's retries."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter

HUD_FORWARDS = Counter(
    "crcr_hud_forwards_total",
    "HUD writes by result (delivered, rejected, queued, retried, dropped, stale).",
    ["result"],
)

_BY_RESULT: dict[str, Any] = {}


def count_forward(result: str) -> None:
    """`HUD_FORWARDS` by `result`, its labelled child looked up once per result: every
    accepted callback counts one, and `labels()` takes a lock and builds a key each call."""
    child = _BY_RESULT.get(result)
    if child is None:
        child = _BY_RESULT[result] = HUD_FORWARDS.labels(result=result)
    child.inc()
