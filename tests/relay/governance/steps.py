"""Steps the governance scenarios share: what an upstream lives through, one call each."""

from __future__ import annotations

from tests.relay.checks_harness import World


async def demote(world: World, repo: str) -> None:
    """One level refresh of the sweeper's leader: the failures so far demote `repo`."""
    levels, book = world.runtime.levels, world.runtime.demotions
    assert levels is not None and book is not None
    await levels()
    assert repo in {demotion.repo for demotion in (await book.demotions()).values()}


async def run_job(
    world: World, repo: str, delivery: str, conclusion: str, **workflow: object
) -> None:
    """One attempt of a job: in_progress, then completed with `conclusion`, both accepted."""
    for status, concluded in (("in_progress", None), ("completed", conclusion)):
        answer = await world.report(repo, delivery, status, concluded, **workflow)
        assert answer.status_code == 200, answer.text
