"""The `hud` retry queue's handler: send a queued body again, unless its job moved on."""

from __future__ import annotations

import logging

from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.relay.results.forwarder import Delivery, HudForwarder
from crcr.relay.results.metrics import HUD_FORWARDS
from crcr.stores.roles import JobStates
from crcr.stores.state import LeasedItem

log = logging.getLogger(__name__)


def hud_queue_handler(store: JobStates, forwarder: HudForwarder) -> QueueHandler:
    """Retry one queued HUD body, unless the job has moved on since it was queued.

    A queued in_progress delivered after the job's completed row would regress the
    row, and a queued timed_out would overwrite the late truth: such stale items are
    acknowledged unsent (the newer body already carries everything they did).
    """

    async def handle(item: LeasedItem) -> HandlerResult:
        expect = HudExpectation.from_store(item.payload.get("expect"))
        if expect is not None and expect.is_stale(await store.get_job(expect.job_key)):
            HUD_FORWARDS.labels(result="stale").inc()
            return HandlerResult.SKIPPED
        result = await forwarder.try_send(item.payload["body"])
        if result.delivery is Delivery.DELIVERED:
            HUD_FORWARDS.labels(result="retried").inc()
            return HandlerResult.DONE
        if result.delivery is Delivery.REJECTED:
            log.error(
                "HUD refused queued item %s with HTTP %s: %s",
                item.item_id,
                result.status_code,
                result.message,
            )
            HUD_FORWARDS.labels(result="dropped").inc()
            return HandlerResult.DROP
        return HandlerResult.RETRY

    return handle
