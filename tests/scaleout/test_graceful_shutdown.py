"""Graceful shutdown (issue 17, Deliver 3): SIGTERM to one of two instances under load.

Clients keep reporting to both instances; one gets SIGTERM. It stops accepting, finishes
what it has in flight (within `CRCR_SHUTDOWN_GRACE`), hands back its queue leases and
the sweeper lock, and exits 0. The clients see no 5xx — a refused or closed connection
is retried on the other instance, as a load balancer would — and every callback that was
answered 2xx reaches the HUD, once.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from pathlib import Path

import httpx
from tests.json_log import entries_at
from tests.scaleout.deployment import L2_REPOS, Child, Deployment, deployment
from tests.waiting import eventually

CLIENTS = 8
RETRYABLE = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError)


class Load:
    """Clients each reporting jobs (in_progress, then completed) to the instances in turn."""

    def __init__(self, placed: Deployment, relays: list[Child], delivery: str) -> None:
        self.placed = placed
        self.relays = relays
        self.delivery = delivery
        self.answers: Counter[int] = Counter()
        self.retried = 0
        self.accepted: set[tuple[str, str, str]] = set()  # jobs whose completion got a 2xx
        self.stop = asyncio.Event()
        self._next = 0

    async def _send(self, n: int, repo: str, job: str, status: str) -> httpx.Response:
        headers, body = self.placed.callback(repo, self.delivery, job, status)
        for attempt in range(10):
            relay = self.relays[(n + attempt) % len(self.relays)]
            try:
                return await self.placed.http.post(
                    f"{relay.url}/github/callback", content=body, headers=headers
                )
            except RETRYABLE:
                self.retried += 1  # refused or closed before an answer: try the other one
        raise AssertionError("no instance answered")

    async def client(self) -> None:
        while not self.stop.is_set():
            n = self._next
            self._next += 1
            repo, job = L2_REPOS[n % 2], f"steady-{n}"
            for status in ("in_progress", "completed"):
                answer = await self._send(n, repo, job, status)
                self.answers[answer.status_code] += 1
                if answer.status_code >= 300:
                    break
                if status == "completed":
                    self.accepted.add((repo, "700", job))


async def test_sigterm_to_one_of_two_instances_under_load_loses_nothing(
    tmp_path: Path, redis_url: str, redis_namespace: str
) -> None:
    async with deployment(
        tmp_path, redis_url=redis_url, redis_prefix=redis_namespace, CRCR_SHUTDOWN_GRACE="20"
    ) as placed:
        await placed.start_hud(f"sqlite:///{tmp_path / 'hud.db'}")
        a = await placed.start_relay("relay-a")
        b = await placed.start_relay("relay-b")
        delivery = await placed.open_pr(a, 301)
        load = Load(placed, [a, b], delivery)
        clients = [asyncio.create_task(load.client()) for _ in range(CLIENTS)]
        try:
            await eventually(lambda: sum(load.answers.values()) >= 40, 120, "load")
            a.popen.send_signal(signal.SIGTERM)
            terminated_at = time.monotonic()
            exit_code = await asyncio.to_thread(a.popen.wait, 60)
            exited_after = time.monotonic() - terminated_at
            before = sum(load.answers.values())
            await eventually(lambda: sum(load.answers.values()) >= before + 40, 120, "load on B")
        finally:
            load.stop.set()
            await asyncio.gather(*clients)

        assert exit_code == 0, a.log_text()[-3000:]
        assert set(load.answers) == {200}, load.answers  # no 5xx, nothing refused
        await eventually(
            lambda: set(placed.gate.completed()) >= load.accepted, 60, "all on the HUD"
        )
        assert all(placed.gate.completed()[job] == 1 for job in load.accepted)
        assert placed.leader() in (None, b)  # A gave the lock up (if it held it)
        assert entries_at(a.log_text(), "error") == []
        print(
            f"SIGTERM: exited 0 after {exited_after:.1f} s; {sum(load.answers.values())} "
            f"answers, {load.retried} connection retries, {len(load.accepted)} jobs on the HUD"
        )
