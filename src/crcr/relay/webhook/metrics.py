"""Prometheus metrics of the upstream side: webhooks and dispatches."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

WEBHOOKS = Counter(
    "crcr_webhooks_total", "Webhook deliveries by event and outcome.", ["event", "outcome"]
)
DISPATCHES = Counter(
    "crcr_dispatches_total",
    "Dispatches by outcome (dispatched, queued, redelivered, failed_permanent, ...).",
    ["outcome"],
)
DISPATCH_SECONDS = Histogram(
    "crcr_dispatch_seconds",
    "Time to send one repository_dispatch, retries included.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
