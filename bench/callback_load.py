"""The callback benchmark's workload and its load generator (run as a separate process).

The workload is deterministic, so the orchestrator (`bench.callbacks`) can write the
dispatch records that the generator's callbacks will be bound to: job `n` is reported
by repo `n % R` for delivery `(n // R) % D`, with a job name that makes it distinct.

The generator speaks HTTP/1.1 over asyncio streams on keep-alive connections, one per
concurrent client: a full HTTP client library costs more CPU per request than the relay
work being measured, and here both share the same two cores.

Run by `bench.callbacks`: `python -m bench.callback_load PLAN.json RESULT.json`, then it
prints `ready`, waits for a line on stdin, runs, writes its results to RESULT.json and
prints `done`. The results (every latency) run to megabytes in a long round: through
the pipe, one such line came back cut in a soak, so they go through a file.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import uvloop

from crcr.sandbox.webhooks import pull_request_event

UPSTREAM = "pytorch/pytorch"
DELIVERY_NAMESPACE = uuid.UUID("6f1c2a52-0d7e-4c59-9a43-5d1b7f3b1e01")
FIRST_PR = 10_000
FIRST_RUN_ID = 7_000_000_000


def bench_repos(count: int) -> list[str]:
    """The L2 repositories that report (several orgs, as on a real allowlist)."""
    return [f"bench-org{i % 10}/backend-{i}" for i in range(count)]


def delivery_id(index: int) -> str:
    """GitHub delivery ids are UUIDs."""
    return str(uuid.uuid5(DELIVERY_NAMESPACE, str(index)))


@cache
def delivery_event(index: int) -> dict[str, Any]:
    """The upstream pull_request event of delivery `index` (~26 KB of JSON)."""
    return pull_request_event("opened", repo=UPSTREAM, number=FIRST_PR + index)


@dataclass(frozen=True)
class Job:
    """One downstream job: who runs it, for which dispatch, under which run id."""

    repo: str
    delivery: int
    job_name: str
    run_id: str


def job(n: int, repos: list[str], deliveries: int, runs: int = 10) -> Job:
    """The `n`th job of the workload.

    A repo's jobs share `runs` run ids, one per token minted for it: the relay ties a
    callback's `run_id` to its token's, as one run's jobs share one run id on GitHub.
    The job name keeps every job distinct.
    """
    repo_count = len(repos)
    return Job(
        repo=repos[n % repo_count],
        delivery=(n // repo_count) % deliveries,
        job_name=f"test-shard-{n // (repo_count * deliveries)}",
        run_id=run_id(n // repo_count % runs),
    )


def run_id(index: int) -> str:
    """The run id of a repo's `index`th run (and of its `index`th token)."""
    return str(FIRST_RUN_ID + index)


@cache
def _encoded_payload(index: int) -> bytes:
    return json.dumps(delivery_event(index)).encode()


def callback_body(work: Job, status: str) -> bytes:
    """The body the reporter sends: the echoed client payload plus `workflow`."""
    workflow = {
        "schema_version": "1",
        "status": status,
        "conclusion": "success" if status == "completed" else None,
        "name": "crcr",
        "url": f"https://github.com/{work.repo}/actions/runs/{work.run_id}",
        "run_id": work.run_id,
        "run_attempt": "1",
        "job_name": work.job_name,
        "check_run_id": str(int(work.run_id) * 10),
        "started_at": "2026-01-15T09:00:00Z",
        "completed_at": "2026-01-15T09:20:00Z" if status == "completed" else None,
        "test_results": {"passed": 1200, "failed": 0, "skipped": 30}
        if status == "completed"
        else None,
        "artifact_url": None,
    }
    head = json.dumps({"event_type": "pull_request", "delivery_id": delivery_id(work.delivery)})
    return b"".join(
        (
            head[:-1].encode(),
            b', "payload": ',
            _encoded_payload(work.delivery),
            b', "workflow": ',
            json.dumps(workflow).encode(),
            b"}",
        )
    )


@dataclass(frozen=True)
class Plan:
    """What one generator run does (written by the orchestrator as JSON)."""

    host: str
    port: int
    concurrency: int
    seconds: float
    first_job: int
    repos: int
    deliveries: int
    tokens: dict[str, list[str]]
    rate: float | None = None  # callbacks/s offered (open loop); None: each client back to back
    fresh_connections: bool = False  # a new connection per callback, as `crcr report` makes


class Connection:
    """One keep-alive HTTP/1.1 connection; a request is written whole, then answered."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def post(self, head: bytes, body: bytes) -> tuple[int, bytes]:
        self.writer.write(head + body)
        header_block = await self.reader.readuntil(b"\r\n\r\n")
        lines = header_block.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)


class Generator:
    """Runs `plan.concurrency` clients, each sending in_progress then completed per job."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.repos = bench_repos(plan.repos)
        self.runs = len(next(iter(plan.tokens.values())))
        self.next_job = plan.first_job
        self.latencies: list[float] = []
        self.answered_at: list[float] = []  # seconds into the run, as each answer arrived
        self.statuses: Counter[str] = Counter()
        self.failures: list[str] = []
        self.started = 0.0
        self.slot = 0

    def _head(self, work: Job, length: int) -> bytes:
        token = self.plan.tokens[work.repo][int(work.run_id) - FIRST_RUN_ID]
        return (
            f"POST /github/callback HTTP/1.1\r\nHost: {self.plan.host}:{self.plan.port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"User-Agent: crcr-bench\r\nContent-Length: {length}\r\n\r\n"
        ).encode()

    async def _client(self, deadline: float, joined: asyncio.Event) -> None:
        connection: Connection | None = None
        try:
            while time.perf_counter() < deadline:
                work = job(self.next_job, self.repos, self.plan.deliveries, self.runs)
                self.next_job += 1
                for status in ("in_progress", "completed"):
                    body = callback_body(work, status)
                    started = await self._turn()
                    if connection is None:
                        connection = await self._connect()
                    joined.set()
                    code, answer = await connection.post(self._head(work, len(body)), body)
                    if self.plan.fresh_connections:
                        connection.writer.close()
                        connection = None
                    answered = time.perf_counter()
                    self.latencies.append(answered - started)
                    self.answered_at.append(answered - self.started)
                    outcome = f"{code} {_status_word(answer)}"
                    self.statuses[outcome] += 1
                    if outcome != "200 accepted" and len(self.failures) < 5:
                        self.failures.append(f"{outcome}: {answer[:200]!r}")
        finally:
            if connection is not None:
                connection.writer.close()

    async def _connect(self) -> Connection:
        reader, writer = await asyncio.open_connection(self.plan.host, self.plan.port)
        return Connection(reader, writer)

    async def _turn(self) -> float:
        """When this request counts from: now, or its slot in the open-loop schedule.

        Open loop, a request's latency runs from the moment it was due, not from when a
        client got round to sending it, so a relay that falls behind is charged for the
        queue it causes (no coordinated omission).
        """
        if self.plan.rate is None:
            return time.perf_counter()
        due = self.started + self.slot / self.plan.rate
        self.slot += 1
        wait = due - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)  # pacing the offered load, not waiting on a result
        return due

    async def run(self) -> dict[str, Any]:
        cpu = os.times()
        started = self.started = time.perf_counter()
        deadline = started + self.plan.seconds
        # The clients join one at a time, each once the one before has its connection and
        # its first request on the way, as load grows on a relay in service: opened all at
        # once, or one by one onto idle workers, kept-alive connections went to whichever
        # worker woke first and stayed there (all 64 on one of two workers, seen).
        clients = []
        for _ in range(self.plan.concurrency):
            joined = asyncio.Event()
            clients.append(asyncio.create_task(self._client(deadline, joined)))
            await joined.wait()
        await asyncio.gather(*clients)
        elapsed = time.perf_counter() - started
        used = os.times()
        return {
            "elapsed": elapsed,
            "requests": len(self.latencies),
            "jobs": self.next_job - self.plan.first_job,
            "latencies": self.latencies,
            "answered_at": self.answered_at,
            "statuses": dict(self.statuses),
            "failures": self.failures,
            "cpu_seconds": (used.user - cpu.user) + (used.system - cpu.system),
        }


def _status_word(answer: bytes) -> str:
    try:
        return str(json.loads(answer).get("status") or "error")
    except ValueError:
        return "unparsable"


def main() -> None:
    plan = Plan(**json.loads(Path(sys.argv[1]).read_text()))
    generator = Generator(plan)
    for index in range(plan.deliveries):  # encode every echoed payload before the clock starts
        _encoded_payload(index)
    print("ready", flush=True)
    sys.stdin.readline()
    result = uvloop.run(generator.run())
    Path(sys.argv[2]).write_text(json.dumps(result))
    print("done", flush=True)


if __name__ == "__main__":
    main()
