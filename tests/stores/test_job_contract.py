"""The job-state and deadline roles' contract, on Redis and on SQLite."""

from __future__ import annotations

import asyncio
from typing import Protocol

from tests.stores.test_state_contract import TTL

from crcr.stores.roles import Deadlines, JobStates, LeaseClaims
from crcr.stores.state import ClaimRef, JobCount, JobRecord, Transition


class TrackedJobs(JobStates, Deadlines, Protocol):
    """Job records with their deadlines, as a callback moves both in one step."""


class ClaimedJobs(TrackedJobs, LeaseClaims, Protocol):
    """Job transitions that read a claim (an oncall comment's) in the same step."""


# --- job state machine ------------------------------------------------------------


async def test_transition_from_no_record_creates_the_job(store: JobStates) -> None:
    new = JobRecord("DISPATCHED", {"dispatched_at": 1712345678.123456})
    result = await store.transition_job("job", allowed_from=[None], new=new, ttl=TTL)
    assert result.applied is True
    assert result.previous is None
    assert await store.get_job("job") == new


async def test_transition_merges_data_and_returns_the_previous_record(store: JobStates) -> None:
    first = JobRecord("DISPATCHED", {"dispatched_at": 1.5, "note": "a"})
    await store.transition_job("job", allowed_from=[None], new=first, ttl=TTL)
    second = JobRecord("IN_PROGRESS", {"started_at": 2.5, "note": "b"})
    result = await store.transition_job("job", allowed_from=["DISPATCHED"], new=second, ttl=TTL)
    assert result.applied is True
    assert result.previous == first
    current = await store.get_job("job")
    assert current == JobRecord(
        "IN_PROGRESS", {"dispatched_at": 1.5, "started_at": 2.5, "note": "b"}
    )


async def test_a_refused_transition_changes_nothing_and_shows_what_is_there(
    store: JobStates,
) -> None:
    done = JobRecord("COMPLETED", {"conclusion": "success"})
    await store.transition_job("job", allowed_from=[None], new=done, ttl=TTL)
    late = JobRecord("IN_PROGRESS", {"conclusion": None})
    result = await store.transition_job("job", allowed_from=[None, "DISPATCHED"], new=late, ttl=TTL)
    assert result.applied is False
    assert result.previous == done
    assert await store.get_job("job") == done


async def test_without_none_in_allowed_from_a_missing_job_is_not_created(
    store: JobStates,
) -> None:
    new = JobRecord("IN_PROGRESS")
    result = await store.transition_job("job", allowed_from=["DISPATCHED"], new=new, ttl=TTL)
    assert result == Transition(applied=False, previous=None)
    assert await store.get_job("job") is None


async def test_job_keys_with_separators_and_braces_stay_distinct(store: JobStates) -> None:
    keys = ["d:org/r:1:1:build {x}", "d:org/r:1:1:build", "d%3Aorg/r:1:1:build"]
    for index, key in enumerate(keys):
        new = JobRecord("DISPATCHED", {"i": index})
        assert (await store.transition_job(key, allowed_from=[None], new=new, ttl=TTL)).applied
    assert [(await store.get_job(key)) for key in keys] == [
        JobRecord("DISPATCHED", {"i": index}) for index in range(len(keys))
    ]


async def test_200_concurrent_identical_transitions_apply_exactly_once(store: JobStates) -> None:
    new = JobRecord("IN_PROGRESS", {"run_id": "1"})
    results = await asyncio.gather(
        *(
            store.transition_job("job", allowed_from=[None, "DISPATCHED"], new=new, ttl=TTL)
            for _ in range(200)
        )
    )
    assert sum(result.applied for result in results) == 1
    assert all(result.previous == new for result in results if not result.applied)


# --- in-progress tracker ----------------------------------------------------------


async def test_overdue_lists_due_jobs_earliest_first(store: Deadlines) -> None:
    await store.track_deadline("job-a", 1000.0)
    await store.track_deadline("job-b", 500.0)
    await store.track_deadline("job-c", 2000.0)
    assert await store.overdue(1500.0) == ["job-b", "job-a"]
    assert await store.overdue(1000.0, limit=1) == ["job-b"]
    assert await store.overdue(499.0) == []


async def test_untrack_and_retrack_change_the_deadline(store: Deadlines) -> None:
    await store.track_deadline("job-a", 1000.0)
    await store.track_deadline("job-b", 500.0)
    await store.untrack_deadline("job-b")
    await store.track_deadline("job-a", 3000.0)
    assert await store.overdue(2000.0) == []
    assert await store.overdue(3000.0) == ["job-a"]
    await store.untrack_deadline("never-tracked")


async def test_an_untrack_not_waited_for_is_seen_by_the_next_overdue(store: Deadlines) -> None:
    await store.track_deadline("job-a", 1000.0)

    await store.untrack_deadline("job-a", wait=False)

    assert await store.overdue(2000.0) == []


async def test_a_transition_tracks_or_untracks_the_deadline_only_when_it_applies(
    store: TrackedJobs,
) -> None:
    started = JobRecord(state="in_progress", data={})
    done = JobRecord(state="completed", data={})

    async def move(new: JobRecord, allowed: set[str | None], deadline: float | None) -> bool:
        change = await store.transition_job_and_deadline(
            "job-a", allowed_from=allowed, new=new, ttl=TTL, deadline=deadline
        )
        return change.applied

    assert await move(started, {None}, 1000.0) is True
    assert await move(started, {None}, 5000.0) is False  # a duplicate keeps the first deadline
    assert await store.overdue(1000.0) == ["job-a"]
    assert await move(done, {"in_progress"}, None) is True
    assert await store.overdue(9000.0) == []
    assert await move(started, {None}, 1000.0) is False  # a late start tracks nothing
    assert await store.overdue(9000.0) == []
    assert await move(done, {"in_progress"}, 7000.0) is False  # nor a repeated completion
    assert await store.overdue(9000.0) == []


async def test_a_tracked_job_keeps_the_earlier_of_its_two_deadlines(store: TrackedJobs) -> None:
    started = JobRecord(state="in_progress", data={})
    done = JobRecord(state="completed", data={})
    for job, completion_deadline in (("job-a", 600.0), ("job-b", 5000.0)):
        for new, allowed, deadline in (
            (started, None, 1000.0),
            (done, "in_progress", completion_deadline),
        ):
            change = await store.transition_job_and_deadline(
                job, allowed_from={allowed}, new=new, ttl=TTL, deadline=deadline
            )
            assert change.applied

    assert await store.overdue(999.0) == ["job-a"]
    assert await store.overdue(1000.0) == ["job-a", "job-b"]


# --- a count riding the transition (the per-dispatch job bound) ------------------


async def test_a_count_beyond_its_limit_refuses_the_transition_and_writes_nothing(
    store: TrackedJobs,
) -> None:
    started = JobRecord(state="in_progress", data={"n": 1})
    count = JobCount("jobs:d-1:org/repo", limit=2, window_seconds=TTL)
    outcomes = [
        await store.transition_job_and_deadline(
            f"job-{n}", allowed_from={None}, new=started, ttl=TTL, deadline=1000.0, count=count
        )
        for n in range(3)
    ]

    assert [(o.applied, o.counted) for o in outcomes] == [
        (True, True),
        (True, True),
        (False, False),
    ]
    assert await store.get_job("job-2") is None
    assert await store.overdue(1000.0) == ["job-0", "job-1"]


async def test_a_repeat_counts_again_and_a_refusal_is_not_counted(store: TrackedJobs) -> None:
    started = JobRecord(state="in_progress", data={})
    count = JobCount("jobs:d-2:org/repo", limit=2, window_seconds=TTL)

    async def start(job: str) -> Transition:
        return await store.transition_job_and_deadline(
            job, allowed_from={None}, new=started, ttl=TTL, deadline=1000.0, count=count
        )

    first, repeat, third = await start("job-a"), await start("job-a"), await start("job-b")

    assert (first.applied, repeat.applied, repeat.counted) == (True, False, True)
    assert third.counted is False  # the repeat took the second place
    other = JobCount("jobs:d-3:org/repo", limit=1, window_seconds=TTL)
    elsewhere = await store.transition_job_and_deadline(
        "job-b", allowed_from={None}, new=started, ttl=TTL, deadline=1000.0, count=other
    )
    assert (elsewhere.applied, elsewhere.counted) == (True, True)


# --- undoing a transition whose effects were refused (a HUD 4xx) -----------------


async def test_restore_puts_the_previous_record_back_whole_and_its_deadline_exactly(
    store: TrackedJobs,
) -> None:
    started = JobRecord("in_progress", {"in_progress_at": 100.0, "run_id": "1"})
    done = JobRecord("completed", {"conclusion": "failure", "run_id": "2"})
    await store.transition_job_and_deadline(
        "job", allowed_from={None}, new=started, ttl=TTL, deadline=1000.0
    )
    completion = await store.transition_job_and_deadline(
        "job", allowed_from={"in_progress"}, new=done, ttl=TTL, deadline=600.0
    )
    assert completion.previous == started

    restored = await store.restore_job(
        "job", expected_state="completed", previous=completion.previous, ttl=TTL, deadline=5000.0
    )

    assert restored is True
    assert await store.get_job("job") == started  # no "conclusion" left from the merge
    # Exactly the deadline given, although later than the one tracked.
    assert await store.overdue(4999.0) == []
    assert await store.overdue(5000.0) == ["job"]
    # The corrected retry is a transition again, not a duplicate.
    retry = await store.transition_job("job", allowed_from={"in_progress"}, new=done, ttl=TTL)
    assert (retry.applied, retry.previous) == (True, started)


async def test_restore_to_no_record_removes_the_job_and_untracks_it(store: TrackedJobs) -> None:
    started = JobRecord("in_progress", {"in_progress_at": 100.0})
    await store.transition_job_and_deadline(
        "job", allowed_from={None}, new=started, ttl=TTL, deadline=1000.0
    )

    restored = await store.restore_job(
        "job", expected_state="in_progress", previous=None, ttl=TTL, deadline=None
    )

    assert restored is True
    assert await store.get_job("job") is None
    assert await store.overdue(9000.0) == []
    again = await store.transition_job("job", allowed_from={None}, new=started, ttl=TTL)
    assert (again.applied, again.previous) == (True, None)


async def test_restore_changes_nothing_once_the_job_has_moved_on(store: TrackedJobs) -> None:
    started = JobRecord("in_progress", {"in_progress_at": 100.0})
    done = JobRecord("completed", {"conclusion": "success"})
    await store.transition_job_and_deadline(
        "job", allowed_from={None}, new=started, ttl=TTL, deadline=1000.0
    )
    await store.transition_job_and_deadline(
        "job", allowed_from={"in_progress"}, new=done, ttl=TTL, deadline=600.0
    )

    moved_on = await store.restore_job(
        "job", expected_state="in_progress", previous=None, ttl=TTL, deadline=None
    )
    never_there = await store.restore_job(
        "other", expected_state="in_progress", previous=started, ttl=TTL, deadline=50.0
    )

    assert (moved_on, never_there) == (False, False)
    assert await store.get_job("job") == JobRecord(
        "completed", {"in_progress_at": 100.0, "conclusion": "success"}
    )
    assert await store.get_job("other") is None
    assert await store.overdue(9000.0) == ["job"]
    assert await store.overdue(599.0) == []


# --- job lists (every job of one dispatch, SPEC §15) --------------------------------


async def test_a_transition_lists_its_job_under_the_name_given_whatever_its_outcome(
    store: TrackedJobs,
) -> None:
    applied = []
    for key in ("d1|org/x|run-1|build", "d1|org/x|run-1|test", "d1|org/x|run-1|test"):
        change = await store.transition_job_and_deadline(
            key,
            allowed_from=[None],
            new=JobRecord("IN_PROGRESS", {"at": 1.0}),
            ttl=TTL,
            deadline=100.0,
            listed_under="jobs:d1:org/x",
        )
        applied.append(change.applied)
    await store.transition_job_and_deadline(
        "d2|org/x|run-1|test",
        allowed_from=[None],
        new=JobRecord("IN_PROGRESS", {"at": 1.0}),
        ttl=TTL,
        deadline=100.0,
        listed_under="jobs:d2:org/x",
    )

    assert applied == [True, True, False]  # the repeat did not apply...
    assert sorted(await store.listed_jobs("jobs:d1:org/x")) == [
        "d1|org/x|run-1|build",
        "d1|org/x|run-1|test",  # ...and its job is listed once
    ]
    assert await store.listed_jobs("jobs:d2:org/x") == ["d2|org/x|run-1|test"]
    assert await store.listed_jobs("jobs:d3:org/x") == []


async def test_a_transition_without_a_list_name_lists_nothing(store: TrackedJobs) -> None:
    await store.transition_job_and_deadline(
        "d1|org/x|run-1|test",
        allowed_from=[None],
        new=JobRecord("IN_PROGRESS", {}),
        ttl=TTL,
        deadline=100.0,
    )
    assert await store.listed_jobs("jobs:d1:org/x") == []


# --- a claim read in the transition's step (the oncall comment of a finished job) ---


async def test_a_transition_reads_the_claims_settled_value_whatever_its_outcome(
    store: ClaimedJobs,
) -> None:
    done = JobRecord(state="completed", data={"conclusion": "success"})
    told = ClaimRef("oncall-comment", "upstream/repo#7:org/backend")
    untold = ClaimRef("oncall-comment", "upstream/repo#8:org/backend")
    await store.claim_lease(told.name, told.key, "instance-a", lease=60.0, ttl=TTL)
    await store.claim_lease(untold.name, untold.key, "instance-a", lease=60.0, ttl=TTL)
    await store.settle_lease(told.name, told.key, "instance-a", "4242", TTL)

    async def complete(job: str, claim: ClaimRef | None) -> Transition:
        return await store.transition_job_and_deadline(
            job, allowed_from={None}, new=done, ttl=TTL, deadline=600.0, read_claim=claim
        )

    applied, repeat = await complete("job-a", told), await complete("job-a", told)
    held_only = await complete("job-b", untold)  # claimed, its comment not posted yet
    nobody = await complete("job-c", ClaimRef("oncall-comment", "upstream/repo#9:org/x"))
    not_asked = await complete("job-d", None)

    assert (applied.applied, applied.claim_value) == (True, "4242")
    assert (repeat.applied, repeat.claim_value) == (False, "4242")
    assert held_only.claim_value is None
    assert nobody.claim_value is None
    assert (not_asked.applied, not_asked.claim_value) == (True, None)
    assert await store.overdue(600.0) == ["job-a", "job-b", "job-c", "job-d"]
