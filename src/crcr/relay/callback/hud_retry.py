"""The `hud` retry queue's handler: send a queued body again, unless its job moved on."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from crcr.relay.callback.hud_forwarder import Delivery, HudForwarder
from crcr.relay.callback.metrics import HUD_FORWARDS
from crcr.relay.sweeper.handlers import HandlerResult, QueueHandler
from crcr.stores.state import LeasedItem, StateStore

log = logging.getLogger(__name__)


def hud_queue_handler(store: StateStore, forwarder: HudForwarder) -> QueueHandler:
    """Retry one queued HUD body, unless the job has moved on since it was queued.

    A queued in_progress delivered after the job's completed row would regress the
    row, and a queued timed_out would overwrite the late truth: such stale items are
    acknowledged unsent (the newer body already carries everything they did).
    """

    async def handle(item: LeasedItem) -> HandlerResult:
        expect = item.payload.get("expect")
        if isinstance(expect, Mapping) and expect.get("job_key"):
            job = await store.get_job(str(expect["job_key"]))
            stale = job is not None and (
                job.state != expect.get("state")
                or job.data.get("conclusion") != expect.get("conclusion")
            )
            if stale:
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
