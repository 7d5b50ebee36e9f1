"""Callback step 7-9: the job state machine, exactly once, and the timing it records.

Scenarios go through the real endpoint on real stores (SQLite and Redis); the HUD
stand-in shows what was written and how often.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import L2_REPO, Relay, callback_body

from crcr.relay.jobs.lifecycle import JobState, job_store_key

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


async def test_in_progress_then_completed_records_both_times(relay: Relay) -> None:
    await relay.dispatch("d-1")
    relay.clock.advance(12.3456)
    started = await relay.post(callback_body("d-1"))
    relay.clock.advance(60.5)
    finished = await relay.post(callback_body("d-1", "completed", "success"))

    assert started.json() == {"status": "accepted"}
    assert finished.json() == {"status": "accepted"}
    row = relay.hud.only_row()
    assert row["status"] == "completed"
    assert row["conclusion"] == "success"
    assert row["queue_time"] == 12.346
    assert row["execution_time"] == 60.5
    assert row["head_sha"] == "a" * 40 and row["pr_number"] == 123
    assert [event.job.state for event in relay.accepted] == [
        JobState.IN_PROGRESS,
        JobState.COMPLETED,
    ]


async def test_an_exact_repeat_is_a_duplicate_and_writes_nothing(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    repeat = await relay.post(callback_body("d-1"))
    await relay.post(callback_body("d-1", "completed", "failure"))
    repeat_completed = await relay.post(callback_body("d-1", "completed", "failure"))

    assert (repeat.status_code, repeat.json()) == (200, {"status": "duplicate"})
    assert (repeat_completed.status_code, repeat_completed.json()) == (200, {"status": "duplicate"})
    assert relay.hud.writes == 2
    assert len(relay.accepted) == 2


async def test_a_second_completed_with_another_conclusion_conflicts(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    await relay.post(callback_body("d-1", "completed", "success"))

    response = await relay.post(callback_body("d-1", "completed", "failure"))

    assert response.status_code == 409
    assert "success" in response.json()["detail"]
    assert relay.hud.only_row()["conclusion"] == "success"


async def test_in_progress_after_completed_conflicts(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    await relay.post(callback_body("d-1", "completed", "success"))

    response = await relay.post(callback_body("d-1"))

    assert response.status_code == 409
    assert relay.hud.only_row()["status"] == "completed"


async def test_completed_without_in_progress_is_refused_and_nothing_is_written(
    relay: Relay,
) -> None:
    await relay.dispatch("d-1")

    response = await relay.post(callback_body("d-1", "completed", "success"))

    assert response.status_code == 400
    assert "in_progress" in response.json()["detail"]
    assert relay.hud.writes == 0
    key = job_store_key("d-1", L2_REPO, "9001", "1", "test")
    assert await relay.store.get_job(key) is None


async def test_a_rerun_is_a_new_job_without_queue_time(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    await relay.post(callback_body("d-1", "completed", "failure"))
    relay.clock.advance(3600)

    rerun_started = await relay.post(callback_body("d-1", run_attempt=2))
    relay.clock.advance(30)
    rerun_finished = await relay.post(callback_body("d-1", "completed", "success", run_attempt=2))

    assert rerun_started.json() == {"status": "accepted"}
    assert rerun_finished.json() == {"status": "accepted"}
    rows = {row["run_attempt"]: row for row in relay.hud.rows.values()}
    assert rows[1]["conclusion"] == "failure"
    assert rows[2]["conclusion"] == "success"
    assert rows[2]["queue_time"] is None
    assert rows[2]["execution_time"] == 30.0


async def test_a_late_completion_replaces_the_sweepers_timeout(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    relay.clock.advance(relay.settings.zombie_timeout + 1)

    report = await relay.sweeper.sweep_once()
    assert report.zombies_finalised == 1
    assert relay.hud.only_row()["conclusion"] == "timed_out"

    relay.clock.advance(100)
    late = await relay.post(callback_body("d-1", "completed", "success"))

    assert (late.status_code, late.json()) == (200, {"status": "accepted"})
    row = relay.hud.only_row()
    assert (row["status"], row["conclusion"]) == ("completed", "success")
    assert row["execution_time"] == relay.settings.zombie_timeout + 101
    assert [event.job.state for event in relay.accepted][-2:] == [
        JobState.TIMED_OUT,
        JobState.COMPLETED,
    ]
    assert (await relay.post(callback_body("d-1", "completed", "success"))).json() == {
        "status": "duplicate"
    }


async def test_after_the_sweepers_timeout_a_repeated_in_progress_is_a_duplicate(
    relay: Relay,
) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    await relay.sweeper.sweep_once()
    writes = relay.hud.writes

    repeat = await relay.post(callback_body("d-1"))

    assert (repeat.status_code, repeat.json()) == (200, {"status": "duplicate"})
    assert relay.hud.writes == writes
    assert relay.hud.only_row()["conclusion"] == "timed_out"


async def test_after_a_late_completion_another_conclusion_conflicts(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    relay.clock.advance(relay.settings.zombie_timeout + 1)
    await relay.sweeper.sweep_once()
    await relay.post(callback_body("d-1", "completed", "success"))

    other = await relay.post(callback_body("d-1", "completed", "failure"))

    assert other.status_code == 409
    assert "'success'" in other.json()["detail"]
    assert relay.hud.only_row()["conclusion"] == "success"


async def test_execution_time_is_never_negative_when_the_clock_steps_back(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))
    relay.clock.advance(-5)

    await relay.post(callback_body("d-1", "completed", "success"))

    assert relay.hud.only_row()["execution_time"] == 0.0


async def test_queue_time_is_never_negative_when_the_clock_steps_back(relay: Relay) -> None:
    await relay.dispatch("d-1")
    relay.clock.advance(-5)

    await relay.post(callback_body("d-1"))

    assert relay.hud.only_row()["queue_time"] == 0.0


@pytest.mark.parametrize(
    ("status", "conclusion"), [("in_progress", None), ("completed", "success")]
)
async def test_200_concurrent_identical_callbacks_are_processed_once(
    relay: Relay, status: str, conclusion: str | None
) -> None:
    await relay.dispatch("d-1")
    if status == "completed":
        await relay.post(callback_body("d-1"))
    writes_before, hooks_before = relay.hud.writes, len(relay.accepted)
    token = relay.token()
    body = callback_body("d-1", status, conclusion)
    # 200 callbacks at once queue for one event loop: on a loaded machine (the suite runs
    # on every core) the last ones can wait past the 2.5 s check budget and be answered
    # 503, which is that budget's own test (test_faults), not this one's.
    relay.deps.check_budget = 60.0

    responses = await asyncio.gather(*(relay.post(body, token=token) for _ in range(200)))

    answers = [response.json().get("status") for response in responses]
    assert all(response.status_code == 200 for response in responses)
    assert answers.count("accepted") == 1
    assert answers.count("duplicate") == 199
    assert relay.hud.writes - writes_before == 1
    assert len(relay.accepted) - hooks_before == 1
    assert len(relay.hud.rows) == 1
