"""The audit trail's writer never waits on the store and never loses an entry silently."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from crcr.relay.audit.entries import dispatch_entry
from crcr.relay.audit.trail import AuditTrail
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StateStore]:
    sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
    yield sqlite_store
    await sqlite_store.close()


def dropped() -> float:
    return REGISTRY.get_sample_value("crcr_audit_dropped_total") or 0.0


def write_failures() -> float:
    return REGISTRY.get_sample_value("crcr_audit_write_failures_total") or 0.0


def not_stored(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("audit entry not stored")]


async def test_recorded_entries_reach_the_store_in_batches(store: StateStore) -> None:
    trail = AuditTrail(store, keep_days=30, keep_per_repo=1000)
    for n in range(700):
        trail.record(dispatch_entry("org/r", f"d{n}", "sent", None))
    await trail.flush()

    assert len(await store.audit_entries("org/r", limit=1000)) == 700
    await trail.aclose()


async def test_entries_linger_for_a_batch_but_flush_and_close_write_them_at_once(
    store: StateStore,
) -> None:
    trail = AuditTrail(store, keep_days=30, keep_per_repo=1000, linger=3600)
    trail.record(dispatch_entry("org/r", "d-flushed", "sent", None))
    await asyncio.sleep(0)  # the writer starts, and lingers

    await asyncio.wait_for(trail.flush(), timeout=60)  # a bound, far below the linger
    assert [e["delivery_id"] for e in await store.audit_entries("org/r")] == ["d-flushed"]

    trail.record(dispatch_entry("org/r", "d-closed", "sent", None))
    await asyncio.sleep(0)
    await asyncio.wait_for(trail.aclose(), timeout=60)
    assert len(await store.audit_entries("org/r")) == 2


async def test_the_settings_bound_what_is_kept(store: StateStore) -> None:
    trail = AuditTrail(store, keep_days=1, keep_per_repo=3)
    old: dict[str, Any] = {**dispatch_entry("org/r", "old", "sent", None), "at": time.time() - 2e5}
    trail.record(old)
    for n in range(5):
        trail.record(dispatch_entry("org/r", f"d{n}", "sent", None))
    await trail.aclose()

    assert [e["delivery_id"] for e in await store.audit_entries("org/r")] == ["d4", "d3", "d2"]


async def test_a_full_buffer_says_each_entry_it_cannot_keep(
    store: StateStore, caplog: pytest.LogCaptureFixture
) -> None:
    trail = AuditTrail(store, keep_days=30, keep_per_repo=100, capacity=2)
    before = dropped()

    for n in range(3):  # the writer cannot run before this loop yields
        trail.record(dispatch_entry("org/r", f"d{n}", "sent", None))
    await trail.aclose()

    assert dropped() == before + 1
    (line,) = not_stored(caplog)
    assert line.levelname == "WARNING" and line.__dict__["delivery_id"] == "d2"
    assert len(await store.audit_entries("org/r")) == 2


async def test_a_store_outage_is_retried_and_what_stays_unwritten_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unreachable = RedisStateStore.from_url("redis://127.0.0.1:1/0", timeout=0.2)
    trail = AuditTrail(
        unreachable, keep_days=30, keep_per_repo=100, retry_delay=0.01, close_budget=0.1
    )
    before, failed_before = dropped(), write_failures()
    try:
        trail.record(dispatch_entry("org/r", "d-outage", "sent", None))
        deadline = time.monotonic() + 30
        while write_failures() == failed_before:  # the writer tried, and failed
            assert time.monotonic() < deadline, "the writer never tried"
            await asyncio.sleep(0.01)
        await trail.aclose()
    finally:
        await unreachable.close()

    assert any("audit trail not written yet" in r.getMessage() for r in caplog.records)
    assert [r.__dict__["delivery_id"] for r in not_stored(caplog)] == ["d-outage"]
    assert dropped() == before + 1
