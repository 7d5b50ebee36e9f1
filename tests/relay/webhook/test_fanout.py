"""One event fanned out: a record per repo before its send, a bounded number in flight."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener

from crcr.github.errors import GitHubNotFound, GitHubUnavailable
from crcr.relay.jobs.dispatch import DispatchStatus, UpstreamContext
from crcr.relay.webhook.fanout import (
    DISPATCH_QUEUE,
    FanOut,
    FanoutStore,
    Result,
    SendDispatch,
    dispatch_to_downstreams,
)
from crcr.stores.state import StateStore

opener = harness.opener
CONTEXT = UpstreamContext("pytorch/pytorch", "pull_request", "a" * 40, 7, ("ciflow/x",), "opened")


@pytest.fixture
async def store(opener: StoreOpener) -> AsyncIterator[StateStore]:
    """A fresh state store on each backend."""
    opened = await opener.open()
    yield opened
    await opened.close()


def fan_out(store: FanoutStore, send: SendDispatch, concurrency: int = 100) -> FanOut:
    return FanOut(
        store=store,
        send=send,
        is_permanent=lambda exc: isinstance(exc, GitHubNotFound),
        record_ttl=3600,
        concurrency=concurrency,
    )


async def dispatch(fanout: FanOut, delivery_id: str, repos: list[str]) -> dict[str, Result]:
    outcomes = await dispatch_to_downstreams(
        fanout,
        delivery_id=delivery_id,
        context=CONTEXT,
        client_payload={"delivery_id": delivery_id},
        trimmed=False,
        repos=repos,
    )
    return {outcome.repo: outcome.result for outcome in outcomes}


def dispatched_count() -> float:
    return REGISTRY.get_sample_value("crcr_dispatches_total", {"outcome": "dispatched"}) or 0.0


async def test_each_repo_has_its_own_pending_record_before_its_dispatch_goes_out(
    store: StateStore,
) -> None:
    repos = [f"org/backend{i}" for i in range(5)]
    seen_before_send: dict[str, dict[str, object] | None] = {}

    async def send(repo: str, body: bytes) -> None:
        seen_before_send[repo] = await store.get_dispatch("d-1", repo)

    before = dispatched_count()
    outcomes = await dispatch(fan_out(store, send), "d-1", repos)

    assert outcomes == dict.fromkeys(repos, Result.DISPATCHED)
    for repo in repos:
        pending = seen_before_send[repo]
        assert pending is not None
        assert (pending["repo"], pending["status"]) == (repo, DispatchStatus.PENDING)
        record = await store.get_dispatch("d-1", repo)
        assert record is not None
        assert (record["repo"], record["status"]) == (repo, DispatchStatus.DISPATCHED)
        assert record["context"] == {
            "upstream_repo": "pytorch/pytorch",
            "event_type": "pull_request",
            "head_sha": "a" * 40,
            "pr_number": 7,
            "labels": ["ciflow/x"],
            "action": "opened",
        }
    assert dispatched_count() == before + len(repos)


async def test_failures_are_recorded_or_queued_by_kind_and_each_counted(
    store: StateStore,
) -> None:
    async def send(repo: str, body: bytes) -> None:
        if repo == "org/gone":
            raise GitHubNotFound("POST /repos/org/gone/dispatches", 404, "Not Found")
        if repo == "org/down":
            raise GitHubUnavailable("POST /repos/org/down/dispatches", 502, "Bad Gateway")

    outcomes = await dispatch(fan_out(store, send), "d-2", ["org/ok", "org/gone", "org/down"])

    assert outcomes == {
        "org/ok": Result.DISPATCHED,
        "org/gone": Result.FAILED,
        "org/down": Result.QUEUED,
    }
    gone = await store.get_dispatch("d-2", "org/gone")
    assert gone is not None and gone["status"] == DispatchStatus.FAILED and "404" in gone["error"]
    down = await store.get_dispatch("d-2", "org/down")
    assert (
        down is not None and down["status"] == DispatchStatus.PENDING
    )  # the queue settles it later
    assert (await store.queue_stats(DISPATCH_QUEUE)).depth == 1


async def test_no_more_dispatches_are_in_flight_than_the_concurrency(store: StateStore) -> None:
    in_flight, peak = 0, 0

    async def send(repo: str, body: bytes) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)  # one turn of the loop: every send not held back starts
        in_flight -= 1

    repos = [f"org/backend{i}" for i in range(10)]
    assert set((await dispatch(fan_out(store, send, 3), "d-3", repos)).values()) == {
        Result.DISPATCHED
    }
    assert peak == 3

    peak = 0
    await dispatch(fan_out(store, send, 100), "d-4", repos)
    assert peak == len(repos)  # under the limit, nothing waits for a turn
