"""Prometheus metrics of the upstream side: webhooks and dispatches."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from crcr.relay.webhook.events import RELAYED_EVENTS

OTHER_EVENT = "other"
"""The `event` label of every delivery whose `X-GitHub-Event` is not relayed (or absent)."""

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


def event_label(event: str) -> str:
    """The `event` label for a header value: a relayed event's name, else `other`.

    The header arrives before the signature is checked, so anyone can choose it; a label
    taken from it as sent would let unsigned requests add series without bound.
    """
    return event if event in RELAYED_EVENTS else OTHER_EVENT
