"""Alert sinks: the signed JSON webhook and the Slack-compatible one, behind the `alerts` queue.

An alert is queued once per sink and sent by the sweeper's drain (retries with backoff,
leases, durable across restarts), so a sink that is down loses nothing and a relay that
dies mid-send resends it. The URLs may carry tokens and the secret signs: neither is
ever logged nor put in an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from crcr.config.settings import Settings
from crcr.relay.alerts.alert import SIGNATURE_HEADER, encode, signature, slack_message
from crcr.relay.alerts.issues import queue_issue
from crcr.relay.alerts.metrics import ALERT_DELIVERIES
from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.stores.roles import RetryQueue
from crcr.stores.state import LeasedItem

log = logging.getLogger(__name__)

ALERT_QUEUE = "alerts"
WEBHOOK, SLACK = "webhook", "slack"
RETRIED_STATUSES = frozenset({408, 429})


@dataclass(frozen=True)
class AlertSinks:
    """Where alerts go; a sink whose URL is unset is off."""

    webhook_url: str | None
    secret: bytes | None
    slack_url: str | None
    issues: bool = False
    """`CRCR_ALERT_ISSUES`: an upstream issue per failing backend (`alerts.issues`)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> AlertSinks:
        """The sinks `CRCR_ALERT_WEBHOOK`, `CRCR_ALERT_SECRET`, `CRCR_ALERT_SLACK_URL` name."""

        def secret(value: Any) -> str | None:
            return None if value is None else str(value.get_secret_value())

        key = secret(settings.alert_secret)
        return cls(
            secret(settings.alert_webhook),
            None if key is None else key.encode(),
            secret(settings.alert_slack_url),
            settings.alert_issues,
        )

    @property
    def names(self) -> tuple[str, ...]:
        """The sinks that are on."""
        return tuple(
            name for name, url in ((WEBHOOK, self.webhook_url), (SLACK, self.slack_url)) if url
        )

    def request(self, sink: str, body: Mapping[str, Any]) -> tuple[str, bytes, dict[str, str]]:
        """URL, bytes and headers of one delivery."""
        headers = {"Content-Type": "application/json", "User-Agent": "crcr-alerts"}
        if sink == WEBHOOK and self.webhook_url:
            content = encode(dict(body))
            if self.secret is not None:
                headers[SIGNATURE_HEADER] = signature(self.secret, content)
            return self.webhook_url, content, headers
        if sink == SLACK and self.slack_url:
            return self.slack_url, encode(slack_message(dict(body))), headers
        raise LookupError(f"alert sink {sink!r} is not configured")


async def queue_alert(store: RetryQueue, sinks: AlertSinks, alert_id: str, body: Any) -> None:
    """Queue one delivery per configured sink (once: the item id names the alert)."""
    for sink in sinks.names:
        await store.enqueue(ALERT_QUEUE, f"{alert_id}:{sink}", {"sink": sink, "alert": body})
    if sinks.issues:
        await queue_issue(store, alert_id, body)


def alert_queue_handler(sinks: AlertSinks, http: httpx.AsyncClient) -> QueueHandler:
    """Send one queued alert to its sink: 2xx done, 4xx dropped, the rest retried."""

    async def handle(item: LeasedItem) -> HandlerResult:
        sink = str(item.payload.get("sink"))
        try:
            url, content, headers = sinks.request(sink, item.payload["alert"])
        except LookupError:  # the sink was turned off since: nothing to send it to
            ALERT_DELIVERIES.labels(sink=sink, result="dropped").inc()
            return HandlerResult.DROP
        try:
            answer = await http.post(url, content=content, headers=headers)
        except httpx.HTTPError as exc:
            log.warning(
                "alert %s to the %s sink not sent: %s", item.item_id, sink, type(exc).__name__
            )
            ALERT_DELIVERIES.labels(sink=sink, result="retried").inc()
            return HandlerResult.RETRY
        if answer.is_success:
            ALERT_DELIVERIES.labels(sink=sink, result="sent").inc()
            return HandlerResult.DONE
        if answer.status_code < 500 and answer.status_code not in RETRIED_STATUSES:
            log.warning(
                "the %s alert sink refused alert %s: HTTP %d",
                sink,
                item.item_id,
                answer.status_code,
            )
            ALERT_DELIVERIES.labels(sink=sink, result="dropped").inc()
            return HandlerResult.DROP
        ALERT_DELIVERIES.labels(sink=sink, result="retried").inc()
        return HandlerResult.RETRY

    return handle
