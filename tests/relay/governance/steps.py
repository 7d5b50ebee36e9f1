"""Steps the governance scenarios share: what an upstream lives through, one call each."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import ALLOWLIST, UPSTREAM, World, installed_sandbox, open_world

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks import push_event

ALLOWLIST_PATH = ".github/crcr-allowlist.yml"
BLOB_URL = f"https://github.com/{UPSTREAM}/blob/main/{ALLOWLIST_PATH}"


@pytest.fixture
async def blob_world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> AsyncIterator[World]:
    """The relay reading its allowlist from the upstream, so that a merge can change it."""
    sandbox = installed_sandbox(sandbox_app)
    sandbox.add_file(UPSTREAM, ALLOWLIST_PATH, ALLOWLIST)
    async with open_world(opener, tmp_path, sandbox, signing_key, BLOB_URL) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        opened.checks.inline_budget = opened.checks.backfill_budget = 30.0
        yield opened


async def merge_allowlist(world: World, text: str) -> None:
    """The allowlist becomes `text` on the default branch; its push webhook reaches the relay."""
    world.sandbox.add_file(UPSTREAM, ALLOWLIST_PATH, text)
    push = push_event(repo=UPSTREAM, after="ab" * 20)
    push["commits"][-1]["modified"] = [ALLOWLIST_PATH]
    assert (await world.webhook("push", push, str(uuid.uuid4()))).status_code == 200


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
