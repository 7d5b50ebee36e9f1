"""Two pushes to one PR whose fan-outs finish out of order (SPEC §15 "Supersession").

The PR is at A; it is pushed to B, then to C. B's webhook lands on one instance, C's on
the other, and C's step moving the live heads runs before B's. Whatever the order, C
stays live and both A and B are superseded by it: each dispatch closed, one
`crcr_cancel` each, their L4 check runs `cancelled` "Superseded by <C>". Run on Redis
and SQLite.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.relay import callback_harness
from tests.relay.budgets.budget_world import CAPPED, OPEN, Budgeted, open_pr
from tests.relay.budgets.supersession_world import cancels, check_runs_on, started
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import World, sandbox_app

from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app"]

PR = 78
A, B, C = ("a1" * 20, "b2" * 20, "c3" * 20)
PUSHED_AT = {A: "2026-11-29T10:00:00Z", B: "2026-11-29T10:00:07Z", C: "2026-11-29T10:00:09Z"}

RACING_ALLOWLIST = f"""
L2:
  - {OPEN}
L4:
  - {CAPPED}: [oncall1]
"""


class HeldHead:
    """Holds one head's step moving the live heads until released: its fan-out is done
    (the dispatches went out), the store has not heard of it yet."""

    def __init__(self, world: World, sha: str) -> None:
        self.reached, self.released = asyncio.Event(), asyncio.Event()
        self.delivery = ""
        deps = world.runtime.webhook
        moving = deps.head_dispatched
        assert moving is not None

        async def held(
            delivery_id: str,
            context: UpstreamContext,
            repos: Sequence[str],
            payload: Mapping[str, Any],
        ) -> int:
            if context.head_sha == sha:
                self.delivery = delivery_id
                self.reached.set()
                await self.released.wait()
            return await moving(delivery_id, context, repos, payload)

        world.runtime.webhook = dataclasses.replace(deps, head_dispatched=held)


async def push(world: World, sha: str, before: str) -> str:
    delivery, answer = await open_pr(
        world, PR, sha, action="synchronize", before=before, at=PUSHED_AT[sha]
    )
    assert set(answer["dispatched"]) == {CAPPED, OPEN}
    return delivery


async def test_the_newest_push_stays_live_when_its_fan_out_finishes_first(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.allowlist.write_text(RACING_ALLOWLIST)
    async with relay.instance() as first, relay.instance() as second:
        opened, _ = await open_pr(first, PR, A, at=PUSHED_AT[A])
        await started(first, opened)

        # B is sent on the first instance, whose step then stalls; its CI starts.
        hold = HeldHead(first, B)
        pushing_b = asyncio.create_task(push(first, B, before=A))
        await asyncio.wait_for(hold.reached.wait(), timeout=30)
        await started(second, hold.delivery)
        # C lands on the second instance and runs its step first.
        pushed_c = await push(second, C, before=B)
        await started(second, pushed_c)
        hold.released.set()
        pushed_b = await pushing_b
        deliveries = {A: opened, B: pushed_b, C: pushed_c}

        # C is live; A and B are closed, each by C.
        store = first.runtime.store
        for repo in (CAPPED, OPEN):
            for older in (A, B):
                record = await store.get_dispatch(deliveries[older], repo)
                assert record is not None
                assert (record["status"], record["superseded_by"]) == ("superseded", C)
            live = await store.get_dispatch(pushed_c, repo)
            assert live is not None and "superseded_by" not in live
            # One crcr_cancel each for A and B, none for C.
            assert [c["cancel"] for c in cancels(first, repo)] == [
                {"delivery_id": deliveries[A], "head_sha": A},
                {"delivery_id": deliveries[B], "head_sha": B},
            ]

        # A's and B's L4 check runs concluded `cancelled`, naming C; C's runs on.
        for older in (A, B):
            runs = check_runs_on(first, older)
            assert [(r["status"], r.get("conclusion")) for r in runs] == [
                ("in_progress", None),
                ("completed", "cancelled"),
            ]
            assert runs[-1]["output"]["title"] == f"Superseded by {C[:7]}"
        assert [r["status"] for r in check_runs_on(first, C)] == ["in_progress"]

        # Both sweepers find nothing left to do; C's CI reports and counts.
        for repo in (CAPPED, OPEN):
            done = await second.report(repo, pushed_c, "completed", "success")
            assert done.is_success, done.text
        await first.settle()
        await second.settle()
        assert all(len(cancels(first, repo)) == 2 for repo in (CAPPED, OPEN))
        assert check_runs_on(first, C)[-1]["conclusion"] == "success"
        # Both backends' HUD rows say so, the L2 one's too: every level's running jobs
        # are found, without waiting for them to report again.
        view = (await first.client.get(f"/api/crcr/pr/{PR}")).json()
        assert {backend["repo"] for backend in view["backends"]} == {CAPPED, OPEN}
        for backend in view["backends"]:
            by_sha = {job["head_sha"]: job for job in backend["jobs"]}
            assert [by_sha[sha]["superseded_by"] for sha in (A, B, C)] == [C, C, None]
            assert [by_sha[sha]["conclusion"] for sha in (A, B, C)] == [
                "cancelled",
                "cancelled",
                "success",
            ]
