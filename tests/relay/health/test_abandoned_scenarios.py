"""A backend stale for 28 days is proposed for L1 (SPEC §13, RFC-0050 "abandoned").

Over the sandbox on both state stores, the allowlist a GitHub blob: every backend gets
a pull request's dispatch; two answer it, the pinned L3 backend never does. With the
health clock injected, 27 days later `crcr levels sync` proposes nothing; 28 days later
it opens one L1 demotion pull request for the silent backend alone, which moves its
entry with every pin and comment kept (SPEC §10.2), and says why.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import AsyncIterator
from pathlib import Path

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

from crcr.cli.levels import sync_levels
from crcr.sandbox.github_identity import SandboxApp

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app

PATH = ".github/crcr-allowlist.yml"
BLOB_URL = f"https://github.com/{UPSTREAM}/blob/main/{PATH}"
PINNED = f"""\
# Backends of pytorch/pytorch.
L2:
  - {L2_REPO}
L3:
  xpu:
    {L3_REPO}:   # pinned to its repository
      oncalls: [xpu-oncall]
      repository_id: 4242
L4:
  - {L4_REPO}: oncall1, oncall2
"""
DAY = 86400.0


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    sandbox.add_file(UPSTREAM, PATH, PINNED)
    async with open_world(opener, tmp_path, sandbox, signing_key, BLOB_URL) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


async def days_later(world: World, days: float) -> None:
    """The relay's health judges `days` from now (its clock injected)."""
    assert world.runtime.audit is not None and world.runtime.health is not None
    await world.runtime.audit.flush()
    world.runtime.health.clock = lambda: time.time() + days * DAY


async def test_stale_for_28_days_gets_an_l1_demotion_pull_request_and_27_does_not(
    world: World,
) -> None:
    delivery = await world.pull_request()
    for repo in (L2_REPO, L4_REPO):  # they answer; the L3 backend never does
        for status, conclusion in (("in_progress", None), ("completed", "success")):
            answer = await world.report(repo, delivery, status, conclusion)
            assert answer.status_code == 200, answer.text

    await days_later(world, 27)
    report = await sync_levels(world.runtime, promotions=False, device=None)
    assert report.opened == [] and world.sandbox.pulls(UPSTREAM) == []

    await days_later(world, 28.01)
    health = (await world.client.get("/api/crcr/health")).json()
    assert {b["repo"]: b["state"] for b in health["backends"]}[L3_REPO] == "stale"
    report = await sync_levels(world.runtime, promotions=False, device=None)

    assert report.opened == [L3_REPO]
    (pull,) = world.sandbox.pulls(UPSTREAM)
    assert pull["title"] == f"[CRCR] Demote {L3_REPO} from L3 to L1"
    assert pull["head"] == f"crcr-demotion/{L3_REPO}"
    assert [label["name"] for label in pull["labels"]] == ["crcr-auto-demotion"]
    assert "has reported nothing for 28 days" in pull["body"]
    assert "@xpu-oncall" in pull["body"]
    proposed = world.sandbox.file_text(UPSTREAM, PATH, pull["head"]) or ""
    diff = difflib.unified_diff(PINNED.splitlines(), proposed.splitlines(), lineterm="", n=0)
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == [
        "+L1:",
        f"+  - {L3_REPO}:   # pinned to its repository",
        "+      oncalls: [xpu-oncall]",
        "+      repository_id: 4242",
        f"-    {L3_REPO}:   # pinned to its repository",
        "-      oncalls: [xpu-oncall]",
        "-      repository_id: 4242",
    ]

    again = await sync_levels(world.runtime, promotions=False, device=None)
    assert not again.changed and len(world.sandbox.pulls(UPSTREAM)) == 1
