"""`max_concurrent` across instances and restarts (SPEC §15 "Concurrency cap").

A backend capped at 1 is sent one PR at a time, in the order the PRs came, whichever
instance took each webhook; the waiting ones survive every instance restarting, and a
slot frees when every job that reported on its dispatch has completed.
"""

from __future__ import annotations

from pathlib import Path

from tests.relay import callback_harness
from tests.relay.budgets.budget_world import CAPPED, OPEN, Budgeted, dispatched_prs, open_pr
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import sandbox_app

from crcr.hud.web.budget_view import BudgetShown
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks import merge_group_event
from crcr.stores.roles.budget_slots import PoolView

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app"]

SHAS = {n: f"{n:x}" * 40 for n in (1, 2, 3)}


async def test_cap_one_sends_three_prs_one_at_a_time_in_order_across_a_restart(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    deliveries: dict[int, str] = {}
    async with relay.instance() as first, relay.instance() as second:
        deliveries[1], answer = await open_pr(first, 1, SHAS[1])
        assert CAPPED in answer["dispatched"]
        deliveries[2], answer = await open_pr(second, 2, SHAS[2])
        assert answer["waiting"] == [CAPPED]
        assert OPEN in answer["dispatched"]  # an entry without a cap is never held back
        deliveries[3], answer = await open_pr(first, 3, SHAS[3])
        assert answer["waiting"] == [CAPPED]
        assert dispatched_prs(first, CAPPED) == [1]
        assert dispatched_prs(first, OPEN) == [1, 2, 3]
        pool = await first.runtime.store.pool_view(CAPPED.lower())
        assert len(pool.running) == 1
        assert [place for place, _ in pool.waiting] == ["pytorch/pytorch#2", "pytorch/pytorch#3"]
        assert first.runtime.budget_board is not None
        assert await first.runtime.budget_board.shown(CAPPED) == BudgetShown(1, 1, 2)
        assert await first.runtime.budget_board.shown(OPEN) is None

    async with relay.instance() as restarted:  # every instance went away; the line did not
        for number in (1, 2):
            assert (await restarted.report(CAPPED, deliveries[number], "in_progress")).is_success
            await restarted.settle()
            assert dispatched_prs(restarted, CAPPED) == list(range(1, number + 1))
            done = await restarted.report(CAPPED, deliveries[number], "completed", "success")
            assert done.is_success, done.text
            await restarted.settle()
            assert dispatched_prs(restarted, CAPPED) == list(range(1, number + 2))
        view = await restarted.runtime.store.pool_view(CAPPED.lower())
        assert view == PoolView(running=view.running, waiting=[])
        assert len(view.running) == 1
        page = await restarted.client.get(f"/crcr/{CAPPED}")  # the backend page (SPEC §15)
        assert page.status_code == 200
        assert "data-running>1 of 1</strong> running · <span data-waiting>0 waiting" in page.text


async def test_a_slot_waits_for_every_job_that_reported_on_the_dispatch(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    async with relay.instance() as world:
        first, _ = await open_pr(world, 1, SHAS[1])
        await open_pr(world, 2, SHAS[2])
        for job in ("build", "test"):
            assert (await world.report(CAPPED, first, "in_progress", job=job)).is_success

        await world.report(CAPPED, first, "completed", "success", job="build")
        await world.settle()
        assert dispatched_prs(world, CAPPED) == [1]

        await world.report(CAPPED, first, "completed", "failure", job="test")
        await world.settle()
        assert dispatched_prs(world, CAPPED) == [1, 2]


async def test_a_pr_closed_while_it_waits_is_never_sent(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    async with relay.instance() as world:
        first, _ = await open_pr(world, 1, SHAS[1])
        await open_pr(world, 2, SHAS[2])
        await open_pr(world, 3, SHAS[3])

        _, answer = await open_pr(world, 2, SHAS[2], "closed")
        assert CAPPED in answer["dispatched"]  # the close itself is relayed, never held back
        await world.report(CAPPED, first, "in_progress")
        await world.report(CAPPED, first, "completed", "success")
        await world.settle()

        sent = world.sandbox.dispatches(CAPPED)
        assert [
            (d.client_payload["payload"]["action"], d.client_payload["payload"]["number"])
            for d in sent
        ] == [("opened", 1), ("closed", 2), ("opened", 3)]


async def test_a_newer_head_of_a_waiting_pr_takes_its_place_and_the_older_is_never_sent(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    async with relay.instance() as world:
        first, _ = await open_pr(world, 1, SHAS[1])
        await open_pr(world, 2, SHAS[2])
        await open_pr(world, 3, SHAS[3])
        newer = "e" * 40
        await open_pr(world, 2, newer, "synchronize")

        await world.report(CAPPED, first, "in_progress")
        await world.report(CAPPED, first, "completed", "success")
        await world.settle()

        sent = world.sandbox.dispatches(CAPPED)
        heads = [d.client_payload["payload"]["pull_request"]["head"]["sha"] for d in sent]
        assert heads == [SHAS[1], newer]
        waiting = (await world.runtime.store.pool_view(CAPPED.lower())).waiting
        assert [place for place, _ in waiting] == ["pytorch/pytorch#3"]


async def test_an_older_push_whose_webhook_comes_late_never_takes_the_newer_ones_place(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    async with relay.instance() as first_instance, relay.instance() as second_instance:
        busy, _ = await open_pr(first_instance, 1, SHAS[1])
        await open_pr(first_instance, 2, SHAS[2])
        middle, newest = "b" * 40, "c" * 40
        # PR 2 is pushed twice; the second push's webhook reaches an instance first.
        _, answer = await open_pr(second_instance, 2, newest, "synchronize", before=middle)
        assert answer["waiting"] == [CAPPED]
        _, late = await open_pr(first_instance, 2, middle, "synchronize", before=SHAS[2])
        assert CAPPED not in late.get("waiting", []) + late["dispatched"]

        await first_instance.report(CAPPED, busy, "in_progress")
        await first_instance.report(CAPPED, busy, "completed", "success")
        await second_instance.settle()
        await first_instance.settle()

        sent = first_instance.sandbox.dispatches(CAPPED)
        heads = [d.client_payload["payload"]["pull_request"]["head"]["sha"] for d in sent]
        assert heads == [SHAS[1], newest]
        assert (await first_instance.runtime.store.pool_view(CAPPED.lower())).waiting == []


async def test_a_merge_group_never_waits_behind_the_cap(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    async with relay.instance() as world:
        await open_pr(world, 1, SHAS[1])  # the only slot is taken

        group = merge_group_event(head_sha="9e" * 20)
        response = await world.webhook("merge_group", group)

        assert response.json()["dispatched"] == [CAPPED]  # L4 alone, at once
        assert [d.event_type for d in world.sandbox.dispatches(CAPPED)] == [
            "pull_request",
            "merge_group",
        ]
