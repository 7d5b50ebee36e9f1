"""What the demo's terminal view shows, and how it is read from the running relay and HUD."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from starlette.datastructures import State

from crcr.relay.results.forwarder import HUD_QUEUE
from crcr.relay.webhook.fanout import DISPATCH_QUEUE
from crcr.sandbox.simulated_ci_state import SimulationSnapshot
from crcr.stores.state import StateStoreUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HudCounts:
    """Today's jobs as the dashboard shows them."""

    completed: int = 0
    failures: int = 0
    timed_out: int = 0
    in_progress: int = 0
    backends: int = 0


@dataclass(frozen=True)
class DemoProgress:
    """One frame of the progress display."""

    elapsed: float
    dashboard_url: str
    events_sent: int
    last_event: str | None
    dispatches: int
    webhook_errors: int
    ci: SimulationSnapshot
    hud: HudCounts
    retry_queue: int | None
    first_result_after: float | None
    log_errors: int = 0
    level_changes: tuple[str, ...] = ()  # the relay's open allowlist pull requests
    alerts: tuple[str, ...] = ()  # what the local alert sink received (crcr.demo.health)


async def read_hud_counts(state: State | None, previous: HudCounts) -> HudCounts:
    """Ask the in-process HUD for today's summary; keep the last counts if it cannot answer."""
    hud = getattr(state, "hud", None)
    if hud is None:
        return previous
    try:
        summary = await hud.queries.summary(1)
    except Exception:  # the display must never take the demo down
        log.exception("could not read the HUD summary")
        return previous
    return HudCounts(
        completed=summary.stats.runs,
        failures=summary.stats.failures,
        timed_out=summary.stats.timed_out,
        in_progress=sum(row.in_progress for row in summary.backends),
        backends=sum(1 for row in summary.backends if row.active),
    )


async def retry_queue_depth(state: State | None) -> int | None:
    """Items waiting in the relay's retry queues (HUD deliveries and dispatches)."""
    runtime = getattr(state, "runtime", None)
    if runtime is None:
        return None
    try:
        depths: list[int] = [
            (await runtime.store.queue_stats(queue)).depth for queue in (HUD_QUEUE, DISPATCH_QUEUE)
        ]
    except StateStoreUnavailable:
        return None
    return sum(depths)
