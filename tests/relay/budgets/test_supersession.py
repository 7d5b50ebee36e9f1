"""Supersession across two instances sharing the store (SPEC §15 "Supersession").

A PR pushed again while its backends still build an older head: the older head's
dispatch is closed, the downstream is told it may cancel (`crcr_cancel`), its check run
on the old commit concludes `cancelled` ("Superseded by <sha>"), and whatever the old
jobs report late is accepted but counted in no pass rate. Run on Redis and SQLite.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from tests.relay import callback_harness
from tests.relay.budgets.budget_world import CAPPED, OPEN, Budgeted, open_pr
from tests.relay.budgets.supersession_world import cancels, check_runs_on, heads_sent, started
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import UPSTREAM, sandbox_app

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey

opener, signing_key = callback_harness.opener, callback_harness.signing_key
__all__ = ["sandbox_app"]

PR = 77
HEADS = [f"{n:x}" * 40 for n in range(1, 6)]
"""Five heads in a row: the PR opened at the first, then four synchronizes."""

SUPERSEDING_ALLOWLIST = f"""
L2:
  - {OPEN}
L4:
  - {CAPPED}: {{oncalls: [oncall1], max_concurrent: 1}}
"""


async def test_five_heads_in_a_row_leave_one_live_head_and_four_cancels(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.allowlist.write_text(SUPERSEDING_ALLOWLIST)
    deliveries: list[str] = []
    async with relay.instance() as first, relay.instance() as second:
        delivery, _ = await open_pr(first, PR, HEADS[0])
        deliveries.append(delivery)
        await started(first, delivery)
        for n, sha in enumerate(HEADS[1:], start=1):
            world = second if n % 2 else first  # the webhooks land on either instance
            delivery, answer = await open_pr(world, PR, sha, action="synchronize")
            deliveries.append(delivery)
            assert OPEN in answer["dispatched"]
            await started(world, delivery)

        # A redelivered synchronize changes nothing.
        await open_pr(first, PR, HEADS[-1], action="synchronize")

        # One live head per backend: every older dispatch record is closed by its successor.
        store = first.runtime.store
        for repo in (CAPPED, OPEN):
            for older, sha in zip(deliveries, HEADS[1:], strict=False):
                record = await store.get_dispatch(older, repo)
                assert record is not None
                assert (record["status"], record["superseded_by"]) == ("superseded", sha)
            live = await store.get_dispatch(deliveries[-1], repo)
            assert live is not None and "superseded_by" not in live
        assert heads_sent(first, CAPPED) == HEADS  # one at a time, each freed by the next

        # Four crcr_cancels per backend, one per superseded head, as SPEC §15 shapes them.
        for repo in (CAPPED, OPEN):
            sent = cancels(first, repo)
            assert [c["cancel"] for c in sent] == [
                {"delivery_id": d, "head_sha": sha}
                for d, sha in zip(deliveries[:-1], HEADS[:-1], strict=True)
            ]
            assert {c["event_type"] for c in sent} == {"crcr_cancel"}
            assert all(c["payload"]["repository"]["full_name"] == UPSTREAM for c in sent)

        # Each old head's L4 check run concluded `cancelled`, once, naming its successor.
        for sha, newer in itertools.pairwise(HEADS):
            runs = check_runs_on(first, sha)
            assert [(r["status"], r.get("conclusion")) for r in runs] == [
                ("in_progress", None),
                ("completed", "cancelled"),
            ]
            assert runs[-1]["output"]["title"] == f"Superseded by {newer[:7]}"
            assert newer in runs[-1]["output"]["summary"]
        assert [r["status"] for r in check_runs_on(first, HEADS[-1])] == ["in_progress"]

        # Late reports of the superseded jobs: accepted, shown as superseded, never counted.
        for delivery in deliveries[:-1]:
            for repo in (CAPPED, OPEN):
                late = await second.report(repo, delivery, "completed", "failure")
                assert late.json() == {"status": "accepted"}, late.text
        for repo in (CAPPED, OPEN):
            done = await first.report(repo, deliveries[-1], "completed", "success")
            assert done.is_success, done.text
        await first.settle()
        await second.settle()

        for sha in HEADS[:-1]:  # no check run of theirs came back to life
            assert check_runs_on(first, sha)[-1]["conclusion"] == "cancelled"
        assert check_runs_on(first, HEADS[-1])[-1]["conclusion"] == "success"
        assert first.comments() == []  # the old heads' failures told no oncall
        assert len(cancels(first, CAPPED)) == 4  # and settling sent no cancel twice

        summary = (await first.client.get("/api/crcr/summary", params={"days": 1})).json()
        rows = {row["repo"]: row for row in summary["backends"]}
        for repo in (CAPPED, OPEN):
            assert (rows[repo]["successes"], rows[repo]["failures"]) == (1, 0)
            assert rows[repo]["pass_rate"] == 1.0
        view = (await first.client.get(f"/api/crcr/pr/{PR}")).json()
        for backend in view["backends"]:
            by_sha = {job["head_sha"]: job for job in backend["jobs"]}
            assert [by_sha[sha]["superseded_by"] for sha in HEADS] == [*HEADS[1:], None]
        pr_page = (await first.client.get(f"/crcr/pr/{PR}")).text
        backend_page = (await first.client.get(f"/crcr/{CAPPED}")).text
        for newer in HEADS[1:]:  # "superseded by <sha7>" on both pages
            assert f"superseded by {newer[:7]}" in pr_page
            assert f"superseded by {newer[:7]}" in backend_page
