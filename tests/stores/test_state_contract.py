"""The StateStore contract, held to the same specification on Redis and on SQLite."""

from __future__ import annotations

import asyncio
import math
import time

from tests.waiting import eventually

from crcr.stores.state import (
    JobRecord,
    LeasedItem,
    QueueStats,
    RateDecision,
    StateStore,
    Transition,
)

TTL = 3600


async def test_ping_answers(store: StateStore) -> None:
    await store.ping()


# --- idempotency and dispatch records --------------------------------------------


async def test_claim_once_admits_only_the_first_claimant(store: StateStore) -> None:
    assert await store.claim_once("delivery-1", TTL) is True
    assert await store.claim_once("delivery-1", TTL) is False
    assert await store.claim_once("delivery-2", TTL) is True


async def test_dispatch_record_is_created_once_and_merged_on_update(store: StateStore) -> None:
    record = {"state": "pending", "head_sha": "abc123", "pr_number": 7, "labels": ["x"]}
    assert await store.put_dispatch("d1", "org/repo", record, TTL) is True
    assert await store.put_dispatch("d1", "org/repo", {"state": "other"}, TTL) is False
    assert await store.get_dispatch("d1", "org/repo") == record

    assert await store.update_dispatch("d1", "org/repo", {"state": "DISPATCHED"}, TTL) is True
    assert await store.get_dispatch("d1", "org/repo") == {**record, "state": "DISPATCHED"}


async def test_dispatch_records_are_per_delivery_and_repo(store: StateStore) -> None:
    await store.put_dispatch("d1", "org/a", {"n": 1}, TTL)
    assert await store.get_dispatch("d1", "org/b") is None
    assert await store.get_dispatch("d2", "org/a") is None
    assert await store.update_dispatch("d1", "org/b", {"n": 2}, TTL) is False
    assert await store.get_dispatch("d1", "org/b") is None


async def test_dispatch_records_are_written_in_batches_without_overwriting(
    store: StateStore,
) -> None:
    await store.put_dispatch("d1", "org/a", {"state": "DISPATCHED"}, TTL)
    records = {"org/a": {"state": "pending"}, "org/b": {"state": "pending"}}

    assert await store.put_dispatches("d1", records, TTL) == {"org/b"}
    assert await store.get_dispatch("d1", "org/a") == {"state": "DISPATCHED"}

    await store.update_dispatches(
        "d1", {"org/b": {"state": "DISPATCHED"}, "org/missing": {"state": "x"}}, TTL
    )
    assert await store.get_dispatch("d1", "org/b") == {"state": "DISPATCHED"}
    assert await store.get_dispatch("d1", "org/missing") is None


async def test_an_empty_dispatch_record_still_exists(store: StateStore) -> None:
    assert await store.put_dispatch("d1", "org/a", {}, TTL) is True
    assert await store.get_dispatch("d1", "org/a") == {}
    assert await store.put_dispatch("d1", "org/a", {}, TTL) is False


# --- job state machine ------------------------------------------------------------


async def test_transition_from_no_record_creates_the_job(store: StateStore) -> None:
    new = JobRecord("DISPATCHED", {"dispatched_at": 1712345678.123456})
    result = await store.transition_job("job", allowed_from=[None], new=new, ttl=TTL)
    assert result.applied is True
    assert result.previous is None
    assert await store.get_job("job") == new


async def test_transition_merges_data_and_returns_the_previous_record(store: StateStore) -> None:
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
    store: StateStore,
) -> None:
    done = JobRecord("COMPLETED", {"conclusion": "success"})
    await store.transition_job("job", allowed_from=[None], new=done, ttl=TTL)
    late = JobRecord("IN_PROGRESS", {"conclusion": None})
    result = await store.transition_job("job", allowed_from=[None, "DISPATCHED"], new=late, ttl=TTL)
    assert result.applied is False
    assert result.previous == done
    assert await store.get_job("job") == done


async def test_without_none_in_allowed_from_a_missing_job_is_not_created(
    store: StateStore,
) -> None:
    new = JobRecord("IN_PROGRESS")
    result = await store.transition_job("job", allowed_from=["DISPATCHED"], new=new, ttl=TTL)
    assert result == Transition(applied=False, previous=None)
    assert await store.get_job("job") is None


async def test_job_keys_with_separators_and_braces_stay_distinct(store: StateStore) -> None:
    keys = ["d:org/r:1:1:build {x}", "d:org/r:1:1:build", "d%3Aorg/r:1:1:build"]
    for index, key in enumerate(keys):
        new = JobRecord("DISPATCHED", {"i": index})
        assert (await store.transition_job(key, allowed_from=[None], new=new, ttl=TTL)).applied
    assert [(await store.get_job(key)) for key in keys] == [
        JobRecord("DISPATCHED", {"i": index}) for index in range(len(keys))
    ]


async def test_200_concurrent_identical_transitions_apply_exactly_once(store: StateStore) -> None:
    new = JobRecord("IN_PROGRESS", {"run_id": "1"})
    results = await asyncio.gather(
        *(
            store.transition_job("job", allowed_from=[None, "DISPATCHED"], new=new, ttl=TTL)
            for _ in range(200)
        )
    )
    assert sum(result.applied for result in results) == 1
    assert all(result.previous == new for result in results if not result.applied)


# --- rate limiting ----------------------------------------------------------------


async def test_rate_limit_counts_down_then_refuses_with_retry_after(store: StateStore) -> None:
    decisions = [await store.hit_rate_limit("org/repo", 3, 60) for _ in range(4)]
    assert [(d.allowed, d.remaining) for d in decisions] == [
        (True, 2),
        (True, 1),
        (True, 0),
        (False, 0),
    ]
    assert 59 <= decisions[-1].retry_after <= 60
    assert (await store.hit_rate_limit("org/other", 3, 60)).allowed is True


async def test_refused_requests_do_not_extend_the_lockout(store: StateStore) -> None:
    first = await store.hit_rate_limit("org/repo", 1, 1.0)
    started = time.monotonic()
    assert first.allowed

    async def allowed_again() -> bool:
        decision = await store.hit_rate_limit("org/repo", 1, 1.0)
        assert decision.allowed or decision.retry_after == 1
        return decision.allowed

    # Had the refused polls been counted, the window would never drain.
    await eventually(allowed_again, within=3.0)
    assert 0.9 <= time.monotonic() - started < 2.0


async def test_the_window_slides_so_hits_leave_it_one_by_one(store: StateStore) -> None:
    """Limit 2: A at t0 and B at t0 + w/2 are let in; just after t0 + w, A has left and C
    is let in, but B still counts, so D is refused until B leaves. A fixed window would
    have forgotten B and let D in.
    """
    window = 2.5  # so that "until B leaves" (~1.25 s, rounded up: 2) is not a whole window

    async def hit() -> tuple[RateDecision, float, float]:
        """One hit, with the monotonic times between which the store counted it."""
        before = time.monotonic()
        decision = await store.hit_rate_limit("org/repo", 2, window)
        return decision, before, time.monotonic()

    a, a_before, a_after = await hit()

    async def half_a_window_on() -> bool:
        return time.monotonic() - a_after >= window / 2

    await eventually(half_a_window_on)
    b, b_before, b_after = await hit()
    assert (a.allowed, a.remaining, b.allowed, b.remaining) == (True, 1, True, 0)

    polls: list[tuple[RateDecision, float, float]] = []

    async def let_in_again() -> bool:  # refused polls are not counted
        polls.append(await hit())
        return polls[-1][0].allowed

    await eventually(let_in_again, within=2 * window)
    c, _, c_after = polls[-1]
    assert c_after - a_before >= window - 0.01  # allowed only once A's window was over
    assert c.remaining == 0  # B still counts
    d, d_before, d_after = await hit()
    assert not d.allowed
    # D waits for B to leave (at B + window), rounded up to whole seconds.
    earliest = math.ceil(b_before + window - d_after - 0.01)
    latest = math.ceil(b_after + window - d_before + 0.01)
    assert earliest <= d.retry_after <= latest


async def test_500_concurrent_hits_with_limit_100_allow_exactly_100(store: StateStore) -> None:
    decisions = await asyncio.gather(
        *(store.hit_rate_limit("org/repo", 100, 60) for _ in range(500))
    )
    assert sum(decision.allowed for decision in decisions) == 100
    assert sorted(d.remaining for d in decisions if d.allowed) == list(range(100))


async def test_rate_limit_hit_and_dispatch_read_in_one_call(store: StateStore) -> None:
    await store.put_dispatch("d1", "org/repo", {"status": "DISPATCHED"}, 60)

    first, record = await store.hit_rate_limit_and_get_dispatch("org/repo", 2, 60, "d1", "org/repo")
    second, missing = await store.hit_rate_limit_and_get_dispatch(
        "org/repo", 2, 60, "d2", "org/repo"
    )
    refused, still = await store.hit_rate_limit_and_get_dispatch(
        "org/repo", 2, 60, "d1", "org/repo"
    )

    assert (first.allowed, first.remaining, record) == (True, 1, {"status": "DISPATCHED"})
    assert (second.allowed, second.remaining, missing) == (True, 0, None)
    assert (refused.allowed, still) == (False, {"status": "DISPATCHED"})
    assert 59 <= refused.retry_after <= 60
    # The combined call counts in the same window as the plain one.
    assert (await store.hit_rate_limit("org/repo", 2, 60)).allowed is False


# --- TTL caches -------------------------------------------------------------------


async def test_cache_values_are_set_read_deleted_and_namespaced(store: StateStore) -> None:
    assert await store.cache_get("jwks", "kid") is None
    await store.cache_set("jwks", "kid", '{"keys": []}', 60)
    await store.cache_set("token", "kid", "other", 60)
    assert await store.cache_get("jwks", "kid") == '{"keys": []}'
    await store.cache_delete("jwks", "kid")
    assert await store.cache_get("jwks", "kid") is None
    assert await store.cache_get("token", "kid") == "other"


async def test_cache_values_expire(store: StateStore) -> None:
    await store.cache_set("allowlist", "current", "v1", 0.2)
    assert await store.cache_get("allowlist", "current") == "v1"

    async def gone() -> bool:
        return await store.cache_get("allowlist", "current") is None

    assert await eventually(gone) >= 0.1


async def test_records_expire_after_their_ttl(store: StateStore) -> None:
    await store.claim_once("delivery", 1)
    await store.put_dispatch("d", "org/r", {"state": "pending"}, 1)
    await store.transition_job("job", allowed_from=[None], new=JobRecord("DISPATCHED"), ttl=1)
    await store.transition_job("undone", allowed_from=[None], new=JobRecord("B"), ttl=TTL)
    await store.restore_job(
        "undone", expected_state="B", previous=JobRecord("A"), ttl=1, deadline=None
    )
    await store.set_flag("wanted", "sha", "org/r", 1)
    await store.put_job_summary("sha", "org/r", "job", {"status": "completed"}, 1)
    await store.put_job_summary("sha", "org/r", "long", {"status": "in_progress"}, TTL)

    async def all_expired() -> bool:
        return (
            await store.get_dispatch("d", "org/r") is None
            and await store.get_job("job") is None
            and await store.get_job("undone") is None
            and not await store.has_flag("wanted", "sha", "org/r")
            and "job" not in await store.job_summaries("sha", "org/r")
        )

    assert await eventually(all_expired) >= 0.5
    assert await store.claim_once("delivery", 1) is True
    assert await store.job_summaries("sha", "org/r") == {"long": {"status": "in_progress"}}
    created = await store.transition_job(
        "job", allowed_from=[None], new=JobRecord("DISPATCHED"), ttl=TTL
    )
    assert created.applied and created.previous is None


# --- durable retry queues with leases -------------------------------------------


async def test_enqueue_is_idempotent_per_item(store: StateStore) -> None:
    assert await store.enqueue("hud", "item-1", {"body": 1}) is True
    assert await store.enqueue("hud", "item-1", {"body": 2}) is False
    leased = await store.lease("hud", lease_seconds=30)
    assert [(item.item_id, item.payload, item.attempts) for item in leased] == [
        ("item-1", {"body": 1}, 0)
    ]
    assert abs(leased[0].enqueued_at - time.time()) < 5


async def test_a_leased_item_is_not_handed_to_another_worker(store: StateStore) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    first = await store.lease("hud", lease_seconds=30)
    assert [item.item_id for item in first] == ["item-1"]
    assert await store.lease("hud", lease_seconds=30) == []
    assert (await store.queue_stats("hud")).depth == 1


async def test_concurrent_workers_each_get_distinct_items(store: StateStore) -> None:
    for index in range(20):
        await store.enqueue("hud", f"item-{index}", {"i": index})
    batches = await asyncio.gather(
        *(store.lease("hud", lease_seconds=30, limit=3) for _ in range(12))
    )
    handed_out = [item.item_id for batch in batches for item in batch]
    assert sorted(handed_out) == sorted(f"item-{index}" for index in range(20))


async def test_an_expired_lease_hands_the_item_out_again(store: StateStore) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (lost,) = await store.lease("hud", lease_seconds=0.3)
    assert await store.lease("hud", lease_seconds=30) == []
    retaken = []

    async def leased_again() -> bool:
        retaken.extend(await store.lease("hud", lease_seconds=30))
        return bool(retaken)

    assert await eventually(leased_again) >= 0.2
    (item,) = retaken
    assert (item.item_id, item.attempts, item.enqueued_at) == ("item-1", 0, lost.enqueued_at)
    assert item.lease_token != lost.lease_token
    assert await store.ack("hud", "item-1", lost.lease_token) is False
    assert await store.release("hud", "item-1", lost.lease_token, delay=0) is False
    assert await store.ack("hud", "item-1", item.lease_token) is True


async def test_a_renewed_lease_outlives_its_first_term_and_only_its_holder_renews(
    store: StateStore,
) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=0.5)
    assert await store.extend_lease("hud", "item-1", "not-the-token", lease_seconds=30) is False
    assert await store.extend_lease("hud", "item-1", item.lease_token, lease_seconds=30) is True
    await asyncio.sleep(0.7)  # past the first term: the item must still be held
    assert await store.lease("hud", lease_seconds=30) == []
    assert await store.ack("hud", "item-1", item.lease_token) is True
    assert await store.extend_lease("hud", "item-1", item.lease_token, lease_seconds=30) is False


async def test_a_lease_renewed_short_ends_soon(store: StateStore) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=300)
    assert await store.extend_lease("hud", "item-1", item.lease_token, lease_seconds=0.2)
    retaken: list[LeasedItem] = []

    async def leased_again() -> bool:
        retaken.extend(await store.lease("hud", lease_seconds=30))
        return bool(retaken)

    await eventually(leased_again)  # a holder that stops renewing loses the item soon
    assert retaken[0].item_id == "item-1"


async def test_ack_removes_the_item_for_good(store: StateStore) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=30)
    assert await store.ack("hud", "item-1", "not-the-token") is False
    assert await store.ack("hud", "item-1", item.lease_token) is True
    assert await store.ack("hud", "item-1", item.lease_token) is False
    assert await store.queue_stats("hud") == QueueStats(depth=0, oldest_age_seconds=0.0)
    assert await store.enqueue("hud", "item-1", {"body": 2}) is True


async def test_release_counts_the_attempt_replaces_the_payload_and_delays(
    store: StateStore,
) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=30)
    assert await store.release("hud", "item-1", "not-the-token", delay=0) is False
    assert await store.release("hud", "item-1", item.lease_token, delay=60, payload={"body": 2})
    assert await store.release("hud", "item-1", item.lease_token, delay=0) is False
    assert await store.lease("hud", lease_seconds=30) == []
    assert (await store.queue_stats("hud")).depth == 1

    await store.enqueue("other", "item-2", {"body": 3})
    (again,) = await store.lease("other", lease_seconds=30)
    assert await store.release("other", "item-2", again.lease_token, delay=0)
    (third,) = await store.lease("other", lease_seconds=30)
    assert (third.attempts, third.payload) == (1, {"body": 3})


async def test_released_payload_replacement_is_what_the_next_lease_sees(
    store: StateStore,
) -> None:
    await store.enqueue("hud", "item-1", {"body": 1})
    (item,) = await store.lease("hud", lease_seconds=30)
    await store.release("hud", "item-1", item.lease_token, delay=0, payload={"body": 2})
    (again,) = await store.lease("hud", lease_seconds=30)
    assert (again.payload, again.attempts) == ({"body": 2}, 1)


async def test_lease_hands_out_the_earliest_ready_items_up_to_the_limit(
    store: StateStore,
) -> None:
    await store.enqueue("hud", "later", {}, delay=0.0)
    await store.enqueue("hud", "delayed", {}, delay=60)
    await store.enqueue("hud", "later-still", {}, delay=0.0)
    first = await store.lease("hud", lease_seconds=30, limit=1)
    rest = await store.lease("hud", lease_seconds=30, limit=10)
    assert [item.item_id for item in first + rest] == ["later", "later-still"]
    assert await store.lease("other-queue", lease_seconds=30) == []


async def test_queue_stats_count_every_item_and_age_the_oldest(store: StateStore) -> None:
    assert (await store.queue_stats("hud")).depth == 0
    await store.enqueue("hud", "ready", {})
    await store.enqueue("hud", "delayed", {}, delay=60)
    await store.enqueue("hud", "leased", {})
    await store.lease("hud", lease_seconds=30, limit=1)

    async def aged() -> bool:
        return (await store.queue_stats("hud")).oldest_age_seconds >= 0.1

    await eventually(aged)
    stats = await store.queue_stats("hud")
    assert stats.depth == 3
    assert 0.1 <= stats.oldest_age_seconds < 5


# --- in-progress tracker ----------------------------------------------------------


async def test_overdue_lists_due_jobs_earliest_first(store: StateStore) -> None:
    await store.track_deadline("job-a", 1000.0)
    await store.track_deadline("job-b", 500.0)
    await store.track_deadline("job-c", 2000.0)
    assert await store.overdue(1500.0) == ["job-b", "job-a"]
    assert await store.overdue(1000.0, limit=1) == ["job-b"]
    assert await store.overdue(499.0) == []


async def test_untrack_and_retrack_change_the_deadline(store: StateStore) -> None:
    await store.track_deadline("job-a", 1000.0)
    await store.track_deadline("job-b", 500.0)
    await store.untrack_deadline("job-b")
    await store.track_deadline("job-a", 3000.0)
    assert await store.overdue(2000.0) == []
    assert await store.overdue(3000.0) == ["job-a"]
    await store.untrack_deadline("never-tracked")


async def test_an_untrack_not_waited_for_is_seen_by_the_next_overdue(store: StateStore) -> None:
    await store.track_deadline("job-a", 1000.0)

    await store.untrack_deadline("job-a", wait=False)

    assert await store.overdue(2000.0) == []


async def test_a_transition_tracks_or_untracks_the_deadline_only_when_it_applies(
    store: StateStore,
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


async def test_a_tracked_job_keeps_the_earlier_of_its_two_deadlines(store: StateStore) -> None:
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


# --- undoing a transition whose effects were refused (a HUD 4xx) -----------------


async def test_restore_puts_the_previous_record_back_whole_and_its_deadline_exactly(
    store: StateStore,
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


async def test_restore_to_no_record_removes_the_job_and_untracks_it(store: StateStore) -> None:
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


async def test_restore_changes_nothing_once_the_job_has_moved_on(store: StateStore) -> None:
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


# --- flags and job summaries ------------------------------------------------------


async def test_flags_are_per_name_sha_and_repo(store: StateStore) -> None:
    assert await store.has_flag("check-runs-wanted", "sha1", "org/r") is False
    await store.set_flag("check-runs-wanted", "sha1", "org/r", TTL)
    assert await store.has_flag("check-runs-wanted", "sha1", "org/r") is True
    assert await store.has_flag("check-runs-wanted", "sha2", "org/r") is False
    assert await store.has_flag("check-runs-wanted", "sha1", "org/other") is False
    assert await store.has_flag("notified", "sha1", "org/r") is False


async def test_job_summaries_are_replaced_per_job_and_grouped(store: StateStore) -> None:
    assert await store.job_summaries("sha1", "org/r") == {}
    await store.put_job_summary("sha1", "org/r", "j:1 {a}", {"status": "in_progress"}, TTL)
    await store.put_job_summary("sha1", "org/r", "j:2", {"status": "in_progress"}, TTL)
    await store.put_job_summary("sha1", "org/r", "j:1 {a}", {"status": "completed"}, TTL)
    await store.put_job_summary("sha1", "org/r2", "j:3", {"status": "queued"}, TTL)
    await store.put_job_summary("sha2", "org/r", "j:4", {"status": "queued"}, TTL)
    assert await store.job_summaries("sha1", "org/r") == {
        "j:1 {a}": {"status": "completed"},
        "j:2": {"status": "in_progress"},
    }


# --- leader lock ------------------------------------------------------------------


async def test_lock_is_held_by_one_owner_and_renewed_by_it(store: StateStore) -> None:
    assert await store.acquire_lock("sweeper", "instance-a", 30) is True
    assert await store.acquire_lock("sweeper", "instance-b", 30) is False
    assert await store.acquire_lock("sweeper", "instance-a", 30) is True
    await store.release_lock("sweeper", "instance-b")
    assert await store.acquire_lock("sweeper", "instance-b", 30) is False
    await store.release_lock("sweeper", "instance-a")
    assert await store.acquire_lock("sweeper", "instance-b", 30) is True
    assert await store.acquire_lock("other-lock", "instance-a", 30) is True


async def test_an_expired_lock_can_be_taken_over(store: StateStore) -> None:
    assert await store.acquire_lock("sweeper", "instance-a", 0.3) is True
    assert await store.acquire_lock("sweeper", "instance-b", 30) is False

    async def taken_over() -> bool:
        return await store.acquire_lock("sweeper", "instance-b", 30)

    assert await eventually(taken_over) >= 0.2
    assert await store.acquire_lock("sweeper", "instance-a", 30) is False


async def test_only_one_of_many_concurrent_contenders_gets_the_lock(store: StateStore) -> None:
    won = await asyncio.gather(
        *(store.acquire_lock("sweeper", f"instance-{i}", 30) for i in range(50))
    )
    assert sum(won) == 1


# --- temporary demotions (SPEC §10.1) ---------------------------------------------


async def test_a_demotion_is_created_once_so_its_start_stays_put(store: StateStore) -> None:
    first = {"since": "2026-11-25T10:00:00+00:00", "from_level": "L3", "pr_url": None}
    assert await store.add_demotion("Org/XPU", first) is True
    later = {"since": "2026-11-25T11:00:00+00:00", "from_level": "L3", "pr_url": None}
    assert await store.add_demotion("org/xpu", later) is False
    assert await store.demotions() == {"org/xpu": first}


async def test_a_demotion_takes_its_pull_request_and_ends_when_removed(store: StateStore) -> None:
    record = {"since": "2026-11-25T10:00:00+00:00", "from_level": "L4", "pr_url": None}
    await store.add_demotion("org/a", record)
    await store.add_demotion("org/b", record)
    url = "https://github.com/pytorch/pytorch/pull/12"
    assert await store.update_demotion("org/a", {"pr_url": url}) is True
    assert await store.update_demotion("org/none", {"pr_url": url}) is False
    assert await store.demotions() == {"org/a": {**record, "pr_url": url}, "org/b": record}

    assert await store.remove_demotion("ORG/A") is True
    assert await store.remove_demotion("org/a") is False
    assert await store.demotions() == {"org/b": record}
    assert await store.demotions() == {"org/b": record}


async def test_waking_retries_readies_items_in_backoff_but_not_leased_or_fresh_ones(
    store: StateStore,
) -> None:
    await store.enqueue("hud", "failed", {"n": 1})
    await store.enqueue("hud", "held", {"n": 2})
    await store.enqueue("hud", "scheduled", {"n": 3}, delay=60)  # delayed on purpose
    failed, held = await store.lease("hud", lease_seconds=30, limit=2)
    assert await store.release("hud", failed.item_id, failed.lease_token, delay=60)
    assert await store.lease("hud", lease_seconds=30) == []

    assert await store.wake_retries("hud") == 1
    (woken,) = await store.lease("hud", lease_seconds=30)
    assert (woken.item_id, woken.attempts) == ("failed", 1)
    assert await store.lease("hud", lease_seconds=30) == []  # held still leased, scheduled waits
    assert await store.extend_lease("hud", held.item_id, held.lease_token, lease_seconds=30)
    assert await store.wake_retries("hud") == 0
    assert await store.wake_retries("empty-queue") == 0
