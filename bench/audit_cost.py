"""The audit trail's own CPU per callback decision: its log line, its entry, its write.

Run: `python -m bench.audit_cost [--decisions 5000] [--redis-url redis://127.0.0.1:6379/0]`.

What the callback path pays (`AuditTrail.callback_decided`: the entry built, its fields
on the request's JSON access log line as `crcr serve` writes it to /dev/null, or on a
line of its own with the access log off; the entry buffered), and what the background
writer pays per entry (`append_audit` in the batches it forms under load), on SQLite
and on Redis. The parts of what `bench.callback_cpu --alternate-audit` measures whole:
the audit's goal is ≤ 5 % of the callback's throughput. The Redis keys live under a
prefix of their own and are deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import tempfile
import time
import uuid
from pathlib import Path

from starlette.types import Message, Receive, Scope, Send

from bench.revocation import forget
from crcr.config.log_format import JsonFormatter
from crcr.config.logging_setup import ACCESS_LOGGER
from crcr.relay.audit.entries import CallbackFacts, callback_entry
from crcr.relay.audit.trail import CAPACITY, AuditTrail
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore
from crcr.web.access_log import AccessLog

REPOS = 50


def facts(n: int) -> CallbackFacts:
    repo = f"bench-org{n % 10}/backend-{n % REPOS}"
    found = CallbackFacts(
        repo=repo,
        subject=f"repo:{repo}:ref:refs/heads/main",
        issuer="https://token.actions.githubusercontent.com",
    )
    delivery = str(uuid.UUID(int=n))
    found.described(delivery, f"{delivery}:{repo}:7000000001:1:job-{n}", "completed", "success")
    return found


async def measure(store: StateStore, label: str, decisions: int, batch: int) -> None:
    """The writer's CPU per entry (the callback path's is measured apart)."""
    trail = AuditTrail(store, keep_days=30, keep_per_repo=10_000)
    entries = [
        callback_entry(facts(n), 200, {"status": "accepted"}, None) for n in range(decisions)
    ]
    started = time.process_time()
    for n, entry in enumerate(entries, 1):
        trail.record(entry)
        if n % batch == 0:  # under load, the writer finds about this many waiting
            await trail.flush()
    await trail.flush()
    cpu = time.process_time() - started
    await trail.aclose()
    print(f"{label}: {1e6 * cpu / decisions:.1f} µs CPU per entry written")


def log_as_serve_does() -> None:
    """JSON lines at INFO, as `crcr serve` logs, into /dev/null."""
    handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 - for the run
    handler.setFormatter(JsonFormatter())
    crcr_log = logging.getLogger("crcr")
    crcr_log.handlers, crcr_log.propagate = [handler], False
    crcr_log.setLevel(logging.INFO)
    logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)


async def path_cost(trail: AuditTrail, written: list[CallbackFacts]) -> float:
    """µs CPU a decision adds to a request under the access log (its line carries it)."""
    decisions = iter(written)

    async def answered(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def decided(scope: Scope, receive: Receive, send: Send) -> None:
        trail.callback_decided(next(decisions), 200, {"status": "accepted"}, None)
        await answered(scope, receive, send)

    async def sent(message: Message) -> None:
        pass

    scope = {"type": "http", "method": "POST", "path": "/github/callback", "client": None}
    cpu = []
    for app in (AccessLog(answered), AccessLog(decided)):
        started = time.process_time()
        for _ in written:
            await app(scope, None, sent)  # type: ignore[arg-type]
        cpu.append(time.process_time() - started)
    return 1e6 * (cpu[1] - cpu[0]) / len(written)


async def main(decisions: int, redis_url: str) -> None:
    log_as_serve_does()
    crcr_log = logging.getLogger("crcr")
    # The callback path alone: no write (a store that is never reached).
    trail = AuditTrail(
        RedisStateStore.from_url("redis://127.0.0.1:1/0"), keep_days=1, keep_per_repo=1
    )
    written = [facts(n) for n in range(decisions)]
    added = await path_cost(trail, written)
    print(f"callback path (entry, buffer, fields on the access log line): +{added:.1f} µs CPU")
    trail._pending.clear()
    logging.getLogger(ACCESS_LOGGER).setLevel(logging.WARNING)  # the access log off
    started = time.process_time()
    for found in written:
        trail.callback_decided(found, 200, {"status": "accepted"}, None)
    cpu = time.process_time() - started
    print(f"callback path, access log off (a line of its own): {1e6 * cpu / decisions:.1f} µs CPU")
    logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)
    crcr_log.setLevel(logging.WARNING)
    started = time.process_time()
    for found in written:
        trail.callback_decided(found, 200, {"status": "accepted"}, None)
    cpu = time.process_time() - started
    print(f"callback path, INFO lines off (log level warning): {1e6 * cpu / decisions:.1f} µs CPU")
    crcr_log.setLevel(logging.INFO)
    trail._pending.clear()  # nothing of this part is to be written

    for batch in (16, 128, 500):
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = await SqliteStateStore.open(Path(tmp) / "state.db")
            await measure(sqlite, f"SQLite, batches of {batch}", decisions, batch)
            await sqlite.close()
        prefix = f"crcr-bench-audit-{uuid.uuid4().hex[:8]}:"
        redis_store = RedisStateStore.from_url(redis_url, prefix=prefix)
        await measure(redis_store, f"Redis, batches of {batch}", decisions, batch)
        await redis_store.close()
        await forget(redis_url, prefix)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=5_000)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    arguments = parser.parse_args()
    if arguments.decisions > CAPACITY // 2:
        # Both callback-path loops fill the one buffer: past its capacity the entries are
        # dropped (a WARNING line each), and the figures would be the drop path's.
        limit = CAPACITY // 2
        parser.error(f"--decisions: at most {limit:,} (the audit buffer holds {CAPACITY:,})")
    asyncio.run(main(arguments.decisions, arguments.redis_url))
