"""The noise floor (SPEC §14): A/A pairs to each L3+ backend, and the rate they measure.

Two dispatches of the upstream default branch's latest commit per backend per interval;
a pair whose runs disagree is noise, shown beside the level criteria as information
(`met: null`), and never counted in the backend's state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    L2_REPO,
    L3_REPO,
    L4_REPO,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)

from crcr.hud.levels.noise import NoiseRate, noise_of
from crcr.relay.culprits.aa import AA_EVENT, AaSender
from crcr.sandbox.github_history import land_commit
from crcr.sandbox.github_identity import SandboxApp

signing_key, sandbox_app = harness.signing_key, sandbox_app


@pytest.fixture
def opener(tmp_path: Path) -> StoreOpener:
    """SQLite alone: what is under test here keeps nothing the two stores do differently
    (the bisection scenarios and the store contract cover both)."""
    return StoreOpener("sqlite", tmp_path / "state.db")


HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    async with open_world(opener, tmp_path, sandbox, signing_key, aa_interval=HOUR) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


def aa_sender(world: World, clock: Clock) -> AaSender:
    assert world.runtime.aa is not None
    world.runtime.aa.clock = clock
    return world.runtime.aa


def aa_payloads(world: World, repo: str | None = None) -> list[dict[str, Any]]:
    return [d.client_payload for d in world.sandbox.dispatches(repo) if d.event_type == AA_EVENT]


async def answer(world: World, repo: str, payload: dict[str, Any], conclusion: str) -> None:
    run_id = 8000 + len(payload["delivery_id"]) + payload["aa"]["run"]
    for status, concluded in (("in_progress", None), ("completed", conclusion)):
        reply = await world.report(repo, payload["delivery_id"], status, concluded, run_id=run_id)
        assert reply.status_code == 200, reply.text


async def test_each_l3_and_l4_backend_gets_one_pair_of_the_latest_commit_per_interval(
    world: World,
) -> None:
    land_commit(world.sandbox, UPSTREAM, "Base")
    latest = land_commit(world.sandbox, UPSTREAM, "Latest", pr_number=9)
    clock = Clock()
    sender = aa_sender(world, clock)

    await sender.send()
    await sender.send()  # the same interval: nothing more
    clock.now += HOUR
    await sender.send()  # the next interval: one more pair each

    for repo in (L3_REPO, L4_REPO):
        sent = aa_payloads(world, repo)
        assert len(sent) == 4
        assert {p["payload"]["after"] for p in sent} == {latest}
        pairs = {p["aa"]["pair"] for p in sent}
        assert len(pairs) == 2 and sorted(p["aa"]["run"] for p in sent) == [1, 1, 2, 2]
    assert aa_payloads(world, L2_REPO) == []


async def test_disagreeing_pairs_are_the_noise_rate_beside_the_criteria_and_not_the_state(
    world: World,
) -> None:
    land_commit(world.sandbox, UPSTREAM, "Base")
    clock = Clock()
    sender = aa_sender(world, clock)
    for conclusions in (("success", "failure"), ("success", "success")):
        await sender.send()
        clock.now += HOUR
        fresh = aa_payloads(world, L3_REPO)[-2:]
        for payload, conclusion in zip(fresh, conclusions, strict=True):
            await answer(world, L3_REPO, payload, conclusion)

    levels = (await world.client.get("/api/crcr/level-status")).json()
    [xpu] = [r for r in levels["repos"] if r["repo"] == L3_REPO]
    [row] = [c for c in xpu["criteria"] if c["criterion"] == "noise_rate"]
    assert row == {
        "criterion": "noise_rate",
        "measured": 0.5,
        "target": "information (2 A/A pairs)",
        "met": None,
    }
    assert xpu["change"] is None
    health = (await world.client.get("/api/crcr/health")).json()
    [state] = [b["state"] for b in health["backends"] if b["repo"] == L3_REPO]
    assert state == "no_data"  # an A/A failure is no default-branch result


def test_a_pair_counts_once_both_runs_have_a_verdict() -> None:
    rows = [
        ("crcr-aa-p1-1", "t", "completed", "success"),
        ("crcr-aa-p1-2", "t", "completed", "failure"),
        ("crcr-aa-p2-1", "t", "completed", "success"),
        ("crcr-aa-p2-2", "t", "in_progress", None),
        ("crcr-aa-p3-1", "t", "completed", "failure"),
        ("crcr-aa-p3-2", "t", "completed", "timed_out"),
        ("manual-x", "t", "completed", "failure"),
    ]
    assert noise_of(rows) == NoiseRate(disagreeing=1, pairs=2)
    assert NoiseRate(0, 0).rate is None


async def test_an_l4_backends_failing_a_a_run_puts_nothing_on_the_upstream(world: World) -> None:
    """No check run, confirming re-run or oncall comment: the run is the relay's own (an
    L4 check run on the latest commit would show the noise floor as a red upstream)."""
    land_commit(world.sandbox, UPSTREAM, "Base", pr_number=9)
    await aa_sender(world, Clock()).send()

    for payload in aa_payloads(world, L4_REPO):
        await answer(world, L4_REPO, payload, "failure")
    await world.settle()

    assert world.check_runs() == []
    assert world.sandbox.reruns(L4_REPO) == []
    assert world.comments() == []
