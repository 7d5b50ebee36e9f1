"""Who broke main (SPEC §14), over the sandbox, on Redis and on SQLite.

The upstream lands commits with parents; the L3 backend passes at the last good push
and fails at the next one; the leader's culprit finder bisects the commits between on
that backend alone, its CI answering through the real callback endpoint.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)
from tests.relay.culprits.bisect_harness import (
    BROKEN,
    BackendCI,
    bisect_dispatches,
    bisect_to_the_end,
    broken_between,
    land_history,
    push_and_report,
    the_finder,
)

from crcr.relay.culprits.finder import CulpritFinder
from crcr.relay.culprits.record import Bisection, Step
from crcr.sandbox.github_history import land_commit
from crcr.sandbox.github_identity import SandboxApp

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app
SQLITE_ONLY = pytest.mark.parametrize("opener", ["sqlite"], indirect=True)
"""For what keeps nothing the two stores do differently; the done-when scenarios and
the two-instance race run on both."""


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    # One failed push makes a backend `failing` here, so the first bad push is the
    # commit that the scenario names `bad`.
    async with open_world(opener, tmp_path, sandbox, signing_key, alert_after=1) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


async def culprits(world: World) -> list[dict[str, Any]]:
    answer = await world.client.get("/api/crcr/culprits")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["culprits"]
    return found


async def test_seven_commits_culprit_fourth_is_found_and_confirmed_on_the_broken_backend_alone(
    world: World,
) -> None:
    history = land_history(world, 7)
    await broken_between(world, history)
    ci = BackendCI(world, history, culprit=history.commits[3])

    await bisect_to_the_end(the_finder(world), ci)

    [verdict] = await culprits(world)
    assert verdict["repo"] == BROKEN
    assert (verdict["good"], verdict["bad"]) == (history.good, history.bad)
    assert verdict["verdict"] == "confirmed" and verdict["confirmed"] is True
    assert verdict["culprit"] == history.commits[3]
    assert verdict["dispatches"] <= math.ceil(math.log2(7)) + 1
    assert verdict["steps"][-1] == {"sha": history.commits[3], "conclusion": "failure"}
    assert set(verdict) == {"repo", "good", "bad", "verdict", "culprit", "confirmed"} | {
        "dispatches",
        "duration_s",
        "steps",
    }
    sent = bisect_dispatches(world)
    assert len(sent) == verdict["dispatches"]
    assert bisect_dispatches(world, BROKEN) == sent  # nobody else is asked
    first = sent[0]
    assert first["payload"]["after"] == first["payload"]["head_commit"]["id"]
    assert first["bisect"] == {"good": history.good, "bad": history.bad, "step": 1}
    health = (await world.client.get("/api/crcr/health")).json()
    [state] = [b["state"] for b in health["backends"] if b["repo"] == BROKEN]
    assert state == "failing"  # the steps that passed are no default-branch results


@SQLITE_ONLY
async def test_the_leaders_sweeper_pass_drives_the_bisection(world: World) -> None:
    history = land_history(world, 5)
    await broken_between(world, history)
    ci = BackendCI(world, history, culprit=history.commits[2])
    world.runtime.sweeper.extra_steps[:] = [the_finder(world)]

    for _ in range(12):
        await world.settle()  # one sweeper pass, as `crcr serve` runs every few seconds
        if await ci.answer() == 0 and (await culprits(world))[0]["verdict"] != "running":
            break

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "confirmed" and verdict["culprit"] == history.commits[2]


async def test_a_culprit_whose_retest_passes_ends_inconclusive(world: World) -> None:
    history = land_history(world, 7)
    await broken_between(world, history)
    culprit = history.commits[3]
    retests: list[str] = []

    def flaky_once_named(payload: dict[str, Any]) -> str | None:
        sha = payload["payload"]["after"]
        if sha == culprit:
            retests.append(sha)
            return "success" if len(retests) > 1 else "failure"  # the re-test disagrees
        return None

    await bisect_to_the_end(
        the_finder(world), BackendCI(world, history, culprit, override=flaky_once_named)
    )

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "inconclusive"
    assert verdict["confirmed"] is False
    assert verdict["steps"][-1] == {"sha": culprit, "conclusion": "success"}


async def test_a_range_of_one_commit_names_the_culprit_without_dispatching(world: World) -> None:
    history = land_history(world, 1)
    await broken_between(world, history)

    await the_finder(world).run_pass()

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "confirmed" and verdict["culprit"] == history.bad
    assert verdict["dispatches"] == 0 and verdict["steps"] == []
    assert bisect_dispatches(world) == []


async def test_two_hundred_commits_take_at_most_nine_dispatches(world: World) -> None:
    history = land_history(world, 200)  # two pages of the compare API
    await broken_between(world, history)
    ci = BackendCI(world, history, culprit=history.commits[122])

    await bisect_to_the_end(the_finder(world), ci, passes=40)

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "confirmed" and verdict["culprit"] == history.commits[122]
    assert verdict["dispatches"] <= 9


async def test_a_leader_killed_mid_bisection_is_continued_by_the_next_without_redoing_steps(
    world: World, opener: StoreOpener
) -> None:
    history = land_history(world, 7)
    await broken_between(world, history)
    ci = BackendCI(world, history, culprit=history.commits[3])
    first = the_finder(world)
    await first.run_pass()  # step 1 sent
    await ci.answer()

    class Killed(Exception):
        pass

    async def dies_before_sending(bisection: Bisection, step: Step) -> None:
        raise Killed  # recorded step 2, then the process died

    dying = replace(first, instance="leader-a")
    dying._send = dies_before_sending  # type: ignore[method-assign]
    with pytest.raises(Killed):
        await dying.run_pass()
    assert len(bisect_dispatches(world)) == 1

    store = await opener.open()  # the next leader: another process, its own connection
    try:
        fanout = replace(first.fanout, store=store)
        announcer = replace(first.announcer, store=store)
        successor = replace(
            first, store=store, fanout=fanout, announcer=announcer, instance="leader-b"
        )
        await bisect_to_the_end(successor, ci)
    finally:
        await store.close()

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "confirmed" and verdict["culprit"] == history.commits[3]
    shas = [p["payload"]["after"] for p in bisect_dispatches(world)]
    bisect_steps = shas[:-1]  # the last is the confirming re-test
    assert len(bisect_steps) == len(set(bisect_steps))  # no step was sent twice
    assert len(shas) == verdict["dispatches"] <= 4


async def test_two_instances_at_once_run_one_bisection(world: World, opener: StoreOpener) -> None:
    history = land_history(world, 7)
    await broken_between(world, history)
    store = await opener.open()
    try:
        other = replace(
            the_finder(world),
            store=store,
            fanout=replace(the_finder(world).fanout, store=store),
            instance="instance-b",
        )
        await asyncio.gather(the_finder(world).run_pass(), other.run_pass(), other.run_pass())
    finally:
        await store.close()

    assert len(await culprits(world)) == 1
    assert len(bisect_dispatches(world)) == 1


@SQLITE_ONLY
async def test_a_new_good_result_on_main_ends_the_bisection_resolved(world: World) -> None:
    history = land_history(world, 7)
    await broken_between(world, history)
    finder: CulpritFinder = the_finder(world)
    await finder.run_pass()
    fixed = land_commit(world.sandbox, UPSTREAM, "Revert the change", pr_number=999)
    await push_and_report(world, fixed, {BROKEN: "success"})

    await finder.run_pass()

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "resolved" and verdict["culprit"] is None
    assert len(bisect_dispatches(world)) == 1


@SQLITE_ONLY
async def test_a_range_github_cannot_list_ends_inconclusive_once_without_dispatching(
    world: World,
) -> None:
    history = land_history(world, 3)
    unknown = "ab" * 20  # a push of a commit the upstream's history does not have
    await push_and_report(world, unknown, {BROKEN: "success"})
    await push_and_report(world, history.bad, {BROKEN: "failure"})

    for _ in range(3):
        await the_finder(world).run_pass()

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "inconclusive" and verdict["dispatches"] == 0
    assert (verdict["good"], verdict["bad"]) == (unknown, history.bad)
    assert bisect_dispatches(world) == []


@SQLITE_ONLY
async def test_a_bisect_result_for_another_commit_than_the_one_sent_is_refused(
    world: World,
) -> None:
    history = land_history(world, 7)
    await broken_between(world, history)
    await the_finder(world).run_pass()
    [sent] = bisect_dispatches(world)
    body = world.callback_body(BROKEN, sent["delivery_id"], "in_progress", run_id=4242)
    body["payload"]["after"] = history.bad  # the echo claims another commit

    answer = await world.post_callback(BROKEN, body)

    assert answer.status_code == 400
    assert answer.json()["detail"] == "payload.after: does not match the dispatch"


@SQLITE_ONLY
async def test_a_step_without_a_result_in_time_ends_the_search_inconclusive(
    world: World,
) -> None:
    history = land_history(world, 7)
    await broken_between(world, history)
    now = [time.time()]
    finder = replace(the_finder(world), clock=lambda: now[0], step_timeout=600.0)
    await finder.run_pass()  # step 1 is sent; the backend's workflow never takes it

    now[0] += 300.0
    await finder.run_pass()
    assert (await culprits(world))[0]["verdict"] == "running"
    now[0] += 301.0
    await finder.run_pass()

    [verdict] = await culprits(world)
    assert verdict["verdict"] == "inconclusive" and verdict["dispatches"] == 1
    assert len(bisect_dispatches(world)) == 1
