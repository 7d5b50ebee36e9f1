"""A HUD outage, told as the operator lives it (issue 16).

The HUD goes down; downstream CI keeps reporting and every callback is answered 202;
the HUD comes back; within seconds everything that waited is on it, each job once, and
while it was down the sweeper asked it about once per probe rest, not once per item.
The outage lasts `--outage-seconds` (3 s in CI; the issue's run is 20 s:
`pytest tests/relay/sweeper/test_hud_outage.py --outage-seconds 20`).
"""

from __future__ import annotations

import asyncio
import time

from tests.relay import callback_harness as harness
from tests.relay.callback_harness import Relay, callback_body
from tests.waiting import eventually

from crcr.relay.results.forwarder import HUD_QUEUE
from crcr.relay.sweeper.sweeper import BUSY_INTERVAL, Sweeper

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)

JOBS = 50  # each reports in_progress then completed: 100 callbacks
RECOVERY_GOAL = 15.0
LIVE_ATTEMPTS = 2  # HttpHudTransport's attempts while the reporter waits


def all_on_the_hud(relay: Relay) -> bool:
    """Every job's completed row is on the HUD."""
    rows = relay.hud.rows.values()
    return len(rows) == JOBS and all(row["status"] == "completed" for row in rows)


async def test_what_waited_through_a_hud_outage_reaches_it_within_seconds_once(
    relay: Relay, outage_seconds: float
) -> None:
    deliveries = [f"outage-{n}" for n in range(JOBS)]
    for delivery in deliveries:
        await relay.dispatch(delivery)
    # The real schedule: wall clock, default backoff, probe rests, busy interval.
    sweeper = Sweeper(relay.store, relay.deps.forwarder, relay.settings)
    relay.deps.forwarder.on_queued = sweeper.nudge  # as open_runtime wires them
    stop = asyncio.Event()
    background = asyncio.create_task(sweeper.run(stop))
    try:
        relay.hud.down = True
        went_down = time.monotonic()
        answers = []
        for delivery in deliveries:
            answers.append(await relay.post(callback_body(delivery)))
            answers.append(await relay.post(callback_body(delivery, "completed", "success")))
        assert [a.status_code for a in answers] == [202] * 2 * JOBS
        # The outage lasts as long as the scenario says, whatever the relay does.
        await asyncio.sleep(max(0.0, outage_seconds - (time.monotonic() - went_down)))
        relay.hud.down = False
        outage = time.monotonic() - went_down  # longer than asked when the callbacks were slow

        took = await eventually(lambda: all_on_the_hud(relay), RECOVERY_GOAL, "all on the HUD")
    finally:
        stop.set()
        await background

    print(f"all {JOBS} jobs on the HUD {took:.1f} s after its recovery")  # shown with -s
    assert took < RECOVERY_GOAL
    assert relay.hud.writes == JOBS  # the superseded in_progress bodies were not sent
    probes = relay.hud.refused - LIVE_ATTEMPTS * 2 * JOBS
    assert 0 < probes <= outage / BUSY_INTERVAL + 1
    assert (await relay.store.queue_stats(HUD_QUEUE)).depth == 0
