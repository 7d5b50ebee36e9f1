"""The leader's `crcr_probe` dispatch to the canary, every `CRCR_CANARY_INTERVAL` (SPEC §13).

Upstream pull requests probe the canary too, but a quiet weekend sends none: the relay
would not know it had stopped dispatching until Monday. So the leader sends one probe
per interval through the ordinary fan-out (pending record first, retry queue), and the
canary's callbacks bind to it like any other dispatch's.

The interval is cut into numbered slots of the clock; each slot's probe is claimed once
in the state store, so any number of instances (and a leader that changes mid-slot)
send one probe per slot.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from crcr.relay.allowlist.model import Allowlist
from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook.client_payload import build_client_payload
from crcr.relay.webhook.fanout import DispatchOutcome, FanOut, dispatch_to_downstreams
from crcr.stores.roles import Idempotency

log = logging.getLogger(__name__)

PROBE_EVENT = "crcr_probe"
DELIVERY_PREFIX = "crcr-probe-"
NO_COMMIT = "0" * 40
"""A probe tests the relay's path, not upstream code: it names no upstream commit."""
CLAIM_PREFIX = "health:probe:"


@dataclass
class ProbeSender:
    """Send the canary its probe once per slot of `interval` seconds; 0 turns it off."""

    store: Idempotency
    fanout: FanOut
    allowlist: Callable[[], Awaitable[Allowlist]]
    upstream_repo: str
    canary: str | None
    interval: float
    clock: Callable[[], float] = time.time

    async def __call__(self) -> None:
        """The sweeper's leader step: `send`."""
        await self.send()

    async def send(self) -> DispatchOutcome | None:
        """Send this slot's probe if no instance has; what happened to it, or None."""
        if self.canary is None or self.interval <= 0:
            return None
        now = self.clock()
        slot = int(now // self.interval)
        keep = math.ceil(self.interval) + 60
        if not await self.store.claim_once(f"{CLAIM_PREFIX}{slot}", keep):
            return None
        entry = (await self.allowlist()).entry(self.canary)
        if entry is None:
            log.warning("CRCR_CANARY_REPO %s is not on the allowlist: no probe sent", self.canary)
            return None
        delivery_id = f"{DELIVERY_PREFIX}{uuid.uuid4()}"
        sent_at = datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z")
        payload = {"repository": {"full_name": self.upstream_repo}, "probe": {"sent_at": sent_at}}
        client_payload = build_client_payload(PROBE_EVENT, delivery_id, payload)
        [outcome] = await dispatch_to_downstreams(
            self.fanout,
            delivery_id=delivery_id,
            context=UpstreamContext(self.upstream_repo, PROBE_EVENT, NO_COMMIT, None),
            client_payload=client_payload.value,
            trimmed=client_payload.trimmed,
            repos=[entry.repo],
        )
        log.info("canary probe %s", outcome.result, extra={"delivery_id": delivery_id})
        return outcome
