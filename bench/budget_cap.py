"""What the SPEC §15 cap costs the dispatch path: state-store round trips per event.

Run: `python -m bench.budget_cap [--repos 100] [--events 50]`. One fan-out of a
`pull_request` event to `--repos` backends, through the webhook's budget hook and the
fan-out exactly as `POST /github/webhook` calls them, over a real SQLite state store
whose every call is counted; GitHub is a send that returns at once, so the numbers are
the relay's own. Four allowlists: no hook at all (the path before issue 32), the hook
with no budget anywhere, one backend capped (`max_concurrent: 1`, its line growing), and
every backend capped. Per capped dispatch the callback path adds one round trip per
reported `in_progress` and per `completed` (`note_job`), counted separately.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, cast

from crcr.relay.allowlist.model import Allowlist, parse_allowlist
from crcr.relay.budgets.cap import DispatchCap
from crcr.relay.budgets.gate import BudgetGate
from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook.fanout import FanOut, FanoutStore, dispatch_to_downstreams
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore


class CountingStore:
    """The real store, with every awaited call counted by name."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._store, name)
        if not callable(real):
            return real

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await real(*args, **kwargs)

        return counted


def allowlist_text(repos: list[str], capped: int) -> str:
    lines = ["L2:"]
    for index, repo in enumerate(repos):
        lines.append(f"  - {repo}: {{max_concurrent: 1}}" if index < capped else f"  - {repo}")
    return "\n".join(lines) + "\n"


async def run_case(
    store: StateStore, repos: list[str], capped: int | None, events: int
) -> tuple[float, float]:
    """(store round trips per event, CPU ms per event) for one allowlist."""
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
    allowlist = parse_allowlist(allowlist_text(repos, capped or 0))

    async def current() -> Allowlist:
        return allowlist

    cap = DispatchCap(cast(StateStore, counting), fanout, current, hold_for=3600, ttl=3600)
    gate = BudgetGate(cap, current, _no_files) if capped is not None else None
    started = time.process_time()
    for number in range(events):
        delivery = str(uuid.uuid4())
        context = UpstreamContext(
            "o/upstream", "pull_request", f"{number:040x}", number, (), "opened"
        )
        targets = list(allowlist.dispatch_targets())
        if gate is not None:
            targets = (
                await gate.ration(
                    delivery_id=delivery,
                    context=context,
                    client_payload={},
                    trimmed=False,
                    repos=targets,
                )
            ).send_now
        await dispatch_to_downstreams(
            fanout,
            delivery_id=delivery,
            context=context,
            client_payload={"n": number},
            trimmed=False,
            repos=targets,
        )
    cpu = (time.process_time() - started) * 1000 / events
    return sum(counting.calls.values()) / events, cpu


async def _no_files(upstream: str, number: int) -> list[str] | None:
    return None


async def main_async(repos_n: int, events: int) -> None:
    repos = [f"org{n % 10}/backend-{n}" for n in range(repos_n)]
    cases: list[tuple[str, int | None]] = [
        ("no budget hook (before)", None),
        ("hook, no entry budgeted", 0),
        ("hook, 1 entry capped", 1),
        (f"hook, all {repos_n} capped", repos_n),
    ]
    print(f"{repos_n} backends, {events} pull_request events, SQLite state store")
    print(f"{'allowlist':<28} {'store calls/event':>18} {'CPU ms/event':>13}")
    for name, capped in cases:
        calls, cpu = [], []
        for _ in range(3):
            with tempfile.TemporaryDirectory() as tmp:
                store = await SqliteStateStore.open(Path(tmp) / "state.db")
                try:
                    c, t = await run_case(store, repos, capped, events)
                finally:
                    await store.close()
            calls.append(c)
            cpu.append(t)
        print(f"{name:<28} {statistics.mean(calls):>18.2f} {statistics.median(cpu):>13.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--events", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main_async(args.repos, args.events))


if __name__ == "__main__":
    main()
