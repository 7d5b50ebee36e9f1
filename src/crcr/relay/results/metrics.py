"""Prometheus metrics of HUD forwarding, shared by the callback's writes and the queue's retries."""

from __future__ import annotations

from prometheus_client import Counter

HUD_FORWARDS = Counter(
    "crcr_hud_forwards_total",
    "HUD writes by result (delivered, rejected, queued, retried, dropped, stale).",
    ["result"],
)
