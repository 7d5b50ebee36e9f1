"""What SPEC §15's supersession costs the `pull_request` path: state-store round trips.

Run: `python -m bench.supersession_cost [--repos 100] [--prs 20]`. Each PR is opened,
then pushed to twice (`synchronize`, the first push's webhook landing last) while no
job has reported yet, fanned out to `--repos` backends exactly as `POST /github/webhook`
does (the fan-out, then the supersession hook), over a real SQLite state store whose
every call is counted (`bench.budget_cap`'s `CountingStore`); GitHub is a send that
returns at once. Printed per event: the fan-out's own calls, and the calls the
supersession hook adds for an `opened` (moving the live heads), for a superseding
`synchronize` (closing every backend's older dispatch and sending the `crcr_cancel`s),
and for the older `synchronize` landing last (it closes its own dispatches: the newer
head stays live).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from pathlib import Path
from typing import Any, cast

from bench.budget_cap import CountingStore
from crcr.hud.write.report import JobReport
from crcr.relay.budgets.supersession import Supersession, SupersessionStore
from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.results.forwarder import HudForwarder, InProcessHudTransport
from crcr.relay.webhook.fanout import FanOut, FanoutStore, dispatch_to_downstreams
from crcr.stores.sqlite.state import SqliteStateStore


class NoHud:
    """An ingestor that takes everything (no job reports here, so nothing is sent)."""

    def ingest(self, body: Any) -> None:
        return None

    def ingest_report(self, report: JobReport) -> None:
        return None


async def measure(repos: list[str], prs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = await SqliteStateStore.open(Path(tmp) / "state.db")
        try:
            counting = CountingStore(store)

            async def send(repo: str, body: bytes) -> None:
                return None

            fanout = FanOut(
                store=cast(FanoutStore, counting),
                send=send,
                is_permanent=lambda exc: False,
                record_ttl=3600,
                concurrency=100,
            )
            forwarder = HudForwarder(InProcessHudTransport(NoHud()), counting, timeout=1.0)
            supersession = Supersession(
                cast(SupersessionStore, counting),
                fanout,
                forwarder,
                record_ttl=3600,
                hook_budget=1.0,
            )
            totals = dict.fromkeys(("fan-out", "opened", "synchronize", "late older"), 0)
            for number in range(1, prs + 1):
                opened, pushed = f"{number:040x}", "f" * 40
                late = "e" * 40  # pushed between the two, its webhook the last to land
                events: tuple[tuple[str, str, str, dict[str, str], int], ...] = (
                    ("opened", opened, "opened", {}, 0),
                    ("synchronize", pushed, "synchronize", {"before": late}, len(repos)),
                    ("late older", late, "synchronize", {"before": opened}, len(repos)),
                )
                for name, sha, action, payload, expected in events:
                    delivery = str(uuid.uuid4())
                    context = UpstreamContext("o/upstream", "pull_request", sha, number, (), action)
                    before = sum(counting.calls.values())
                    await dispatch_to_downstreams(
                        fanout,
                        delivery_id=delivery,
                        context=context,
                        client_payload={"n": number},
                        trimmed=False,
                        repos=repos,
                    )
                    middle = sum(counting.calls.values())
                    superseded = await supersession.dispatched(delivery, context, repos, payload)
                    after = sum(counting.calls.values())
                    totals["fan-out"] += middle - before
                    totals[name] += after - middle
                    assert superseded == expected, (name, superseded)
            per_backend = prs * len(repos)
            return {
                "fan-out calls/event": totals["fan-out"] / (3 * prs),
                "opened: hook calls/event": totals["opened"] / prs,
                "synchronize: hook calls/event": totals["synchronize"] / prs,
                "synchronize: hook calls/superseded backend": totals["synchronize"] / per_backend,
                "late older synchronize: hook calls/event": totals["late older"] / prs,
                "late older: hook calls/superseded backend": totals["late older"] / per_backend,
            }
        finally:
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--prs", type=int, default=20)
    args = parser.parse_args()
    repos = [f"org{n % 10}/backend-{n}" for n in range(args.repos)]
    results = asyncio.run(measure(repos, args.prs))
    shape = "opened, then two synchronizes whose webhooks land newest first"
    print(f"{args.repos} backends, {args.prs} PRs ({shape}), SQLite")
    for name, value in results.items():
        print(f"{name:<45} {value:>8.2f}")


if __name__ == "__main__":
    main()
