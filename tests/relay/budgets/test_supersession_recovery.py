"""A relay that dies between moving a PR's live heads and closing the old head's
dispatch (SPEC §15 "Supersession"): what it decided is finished by another instance.

The PR is at A, both backends' CI running; a push to B reaches a relay that sends B,
swaps the live heads and dies. A restarted relay (or the other instance) closes A's
dispatch, sends its `crcr_cancel` once and supersedes its jobs: the L4 check run on A
concludes `cancelled`, no job of A's ever times out as a failure. Run on Redis and SQLite.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.relay import callback_harness
from tests.relay.budgets.budget_world import CAPPED, OPEN, Budgeted, open_pr
from tests.relay.budgets.supersession_world import cancels, check_runs_on, started
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import UPSTREAM, World, sandbox_app

from crcr.relay.budgets.supersession import RECOVERY_GRACE, Supersession
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks import pull_request_event
from crcr.stores.roles.pull_heads import SupersededHead

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app"]

PR = 79
A, B = ("a4" * 20, "b5" * 20)
ZOMBIE_TIMEOUT = 3600
RECOVERY_ALLOWLIST = f"""
L2:
  - {OPEN}
L4:
  - {CAPPED}: [oncall1]
"""


class RelayDied(Exception):
    """The process is gone: nothing after the heads' swap happens."""


def supersession_of(world: World) -> Supersession:
    supersession = world.runtime.supersession
    assert supersession is not None
    return supersession


async def push_then_die(world: World, monkeypatch: pytest.MonkeyPatch) -> str:
    """Push B through `world`, which dies right after swapping the live heads."""

    async def dies(superseded: Sequence[SupersededHead]) -> int:
        raise RelayDied

    monkeypatch.setattr(supersession_of(world), "_follow_up", dies)
    payload = pull_request_event("synchronize", repo=UPSTREAM, number=PR, head_sha=B, before=A)
    response = await world.webhook("pull_request", payload, "push-to-b")
    assert response.status_code == 500  # GitHub saw the connection drop
    assert {d.client_payload["delivery_id"] for d in world.sandbox.dispatches(OPEN)} >= {
        "push-to-b"
    }
    return "push-to-b"


def later(seconds: float) -> float:
    return time.time() + seconds


async def assert_a_superseded_once(world: World, opened: str) -> None:
    store = world.runtime.store
    for repo in (CAPPED, OPEN):
        record = await store.get_dispatch(opened, repo)
        assert record is not None
        assert (record["status"], record["superseded_by"]) == ("superseded", B)
        assert [c["cancel"] for c in cancels(world, repo)] == [
            {"delivery_id": opened, "head_sha": A}
        ]
    runs = check_runs_on(world, A)
    assert [(r["status"], r.get("conclusion")) for r in runs] == [
        ("in_progress", None),
        ("completed", "cancelled"),
    ]
    assert runs[-1]["output"]["title"] == f"Superseded by {B[:7]}"


async def test_a_restarted_relay_finishes_the_supersession_its_predecessor_decided(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox_app: SandboxApp,
    signing_key: SigningKey,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.allowlist.write_text(RECOVERY_ALLOWLIST)
    async with relay.instance() as other:
        async with relay.instance() as dying:
            opened, _ = await open_pr(dying, PR, A)
            await started(dying, opened)
            await push_then_die(dying, monkeypatch)
        # Nothing closed yet; the other instance's sweeper leaves it within the grace.
        await other.settle()
        assert cancels(other, OPEN) == []

        async with relay.instance(clock=lambda: later(RECOVERY_GRACE + 1)) as restarted:
            report = await restarted.settle()
            assert report.zombies_finalised == 0
            await assert_a_superseded_once(restarted, opened)
            await restarted.settle()  # a second pass, and the other instance's: no repeat
            await other.settle()
            await assert_a_superseded_once(restarted, opened)
            heads = await restarted.runtime.store.pull_heads(f"{UPSTREAM}#{PR}")
            assert list(heads.pending) == []


async def test_a_job_whose_head_is_known_superseded_is_superseded_at_its_timeout(
    opener: StoreOpener,
    tmp_path: Path,
    sandbox_app: SandboxApp,
    signing_key: SigningKey,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.allowlist.write_text(RECOVERY_ALLOWLIST)
    async with relay.instance(zombie_timeout=ZOMBIE_TIMEOUT) as dying:
        opened, _ = await open_pr(dying, PR, A)
        await started(dying, opened)
        await push_then_die(dying, monkeypatch)
        # Its pending record lost too (say, settled by a buggy release): only the
        # heads say that A is older than B.
        pull = f"{UPSTREAM}#{PR}"
        pending = (await dying.runtime.store.pull_heads(pull)).pending
        await dying.runtime.store.settle_pull_heads(pull, pending)

    def hours_on() -> float:
        return later(ZOMBIE_TIMEOUT + 60)

    async with relay.instance(clock=hours_on, zombie_timeout=ZOMBIE_TIMEOUT) as restarted:
        report = await restarted.settle()
        assert report.zombies_finalised == 0  # superseded, not timed out
        await assert_a_superseded_once(restarted, opened)
        summary = (await restarted.client.get("/api/crcr/summary", params={"days": 1})).json()
        assert all(row["failures"] == 0 for row in summary["backends"])
