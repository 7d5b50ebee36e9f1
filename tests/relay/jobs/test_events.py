"""Hooks run after a job moves: each gets its turn, within one budget, and none is fatal."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import cast

import pytest

from crcr.relay.jobs.events import JobTransitioned, run_hooks
from crcr.relay.jobs.job import Job

EVENT = JobTransitioned(job=cast(Job, SimpleNamespace(key="d-1:org/backend:9:1:test")), hud_body={})


async def test_a_failing_hook_is_logged_and_the_next_one_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    async def failing(event: JobTransitioned) -> None:
        raise RuntimeError("boom")

    async def recording(event: JobTransitioned) -> None:
        ran.append(event.job.key)

    with caplog.at_level(logging.ERROR):
        await run_hooks([failing, recording], EVENT, budget=5.0)

    assert ran == [EVENT.job.key]
    assert "failing failed for job d-1:org/backend:9:1:test" in caplog.text


async def test_a_hook_cut_at_the_deadline_is_logged_and_later_hooks_run_what_needs_no_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []
    never = asyncio.Event()

    async def hanging(event: JobTransitioned) -> None:
        await never.wait()

    async def waiting_too(event: JobTransitioned) -> None:
        await never.wait()
        ran.append("waited")

    async def at_once(event: JobTransitioned) -> None:
        ran.append("at once")

    with caplog.at_level(logging.ERROR):
        await run_hooks([hanging, waiting_too, at_once], EVENT, budget=0.05)

    assert ran == ["at once"]
    assert caplog.text.count("failed for job") == 2
    assert "hanging failed" in caplog.text and "waiting_too failed" in caplog.text
