"""What the supersession scenarios look at (SPEC §15): the `crcr_cancel`s and PR heads a
backend was sent, the L4 check runs on a commit, and CI starting on a head."""

from __future__ import annotations

from typing import Any

from tests.relay.budgets.budget_world import CAPPED, OPEN
from tests.relay.checks_harness import World

CHECK_NAME = f"crcr/{CAPPED}/ci/test"


def cancels(world: World, repo: str) -> list[dict[str, Any]]:
    """The `crcr_cancel` dispatches `repo` got, oldest first."""
    return [
        d.client_payload for d in world.sandbox.dispatches(repo) if d.event_type == "crcr_cancel"
    ]


def heads_sent(world: World, repo: str) -> list[str]:
    """The PR heads `repo` was sent, oldest first."""
    return [
        d.client_payload["payload"]["pull_request"]["head"]["sha"]
        for d in world.sandbox.dispatches(repo)
        if d.event_type == "pull_request"
    ]


def check_runs_on(world: World, sha: str) -> list[dict[str, Any]]:
    return [run for run in world.check_runs(CHECK_NAME) if run["head_sha"] == sha]


async def started(world: World, delivery: str) -> None:
    """Both backends' CI start on this head (the capped one once its slot came)."""
    await world.settle()  # a capped head admitted by a freed slot is sent from the queue
    for repo in (CAPPED, OPEN):
        response = await world.report(repo, delivery, "in_progress")
        assert response.json() == {"status": "accepted"}, response.text
