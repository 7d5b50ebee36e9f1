"""Issue 14's scenario over the sandbox: a backend degrades, is demoted, and recovers.

Its results degrade → the level status says `demote` → its next callbacks create no
check run while an older job's check run still completes → `crcr levels sync` opens
exactly one pull request whose allowlist diff moves only that entry → a second sync
changes nothing → results recover → the pull request is closed (comment, branch
deleted) and check runs return.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    ALLOWLIST,
    DEVICE_LABEL,
    L2_REPO,
    L3_REPO,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)

from crcr.cli.levels import sync_levels
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SigningKey

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app

PATH = ".github/crcr-allowlist.yml"
BLOB_URL = f"https://github.com/{UPSTREAM}/blob/main/{PATH}"
COMMENTED = "# Backends of pytorch/pytorch, reviewed by the CI team.\n" + ALLOWLIST.replace(
    f"  - {L2_REPO}\n", f"  - {L2_REPO}   # results only\n"
)
BRANCH = f"crcr-demotion/{L3_REPO}"


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    sandbox.add_file(UPSTREAM, PATH, COMMENTED)
    async with open_world(opener, tmp_path, sandbox, signing_key, BLOB_URL) as opened:
        yield opened


async def degrade(world: World, delivery: str) -> None:
    await run_jobs(world, delivery, "failure", range(600, 602))


async def run_jobs(world: World, delivery: str, conclusion: str, runs: range) -> None:
    """Jobs of the L3 backend that start and finish, each in a run of its own."""
    for run_id in runs:
        started = await world.report(L3_REPO, delivery, "in_progress", run_id=run_id)
        assert started.status_code == 200, started.text
        done = await world.report(L3_REPO, delivery, "completed", conclusion, run_id=run_id)
        assert done.status_code == 200, done.text


def checks_of(world: World, run_id: int) -> list[str]:
    """The statuses of the check runs created for one downstream run."""
    return [
        run["status"] for run in world.check_runs() if run["external_id"].startswith(f"{run_id}:")
    ]


async def demoted_gauge(world: World) -> str:
    metrics = (await world.client.get("/metrics")).text
    found = re.search(r'^crcr_demoted_backends\{level="L3"\} (\S+)$', metrics, re.M)
    assert found is not None
    return found.group(1)


def writes(sandbox: SandboxGitHub) -> int:
    return sum(len(sandbox.calls(method)) for method in ("POST", "PUT", "PATCH", "DELETE"))


def oncall_comment_edits(sandbox: SandboxGitHub) -> int:
    return len(sandbox.calls("PATCH", "*/issues/comments/*"))


async def test_a_degraded_backend_is_demoted_proposed_and_restored(world: World) -> None:
    levels = world.runtime.levels
    assert levels is not None
    levels.sync_interval = 0  # here the pull requests wait for `crcr levels sync`
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))

    # An older job starts while the backend is still at L3: its check run is in progress.
    older = await world.report(L3_REPO, delivery, "in_progress", run_id=500)
    assert older.status_code == 200 and checks_of(world, 500) == ["in_progress"]

    # Its results degrade: the level status says demote, and the demotion starts.
    await degrade(world, delivery)
    await levels()
    status = (await world.client.get("/api/crcr/level-status")).json()
    (xpu,) = [repo for repo in status["repos"] if repo["repo"] == L3_REPO]
    assert xpu["change"] == "demote" and xpu["demoted"] is not None
    assert await demoted_gauge(world) == "1.0"

    # New jobs get no check run; the older job's still completes.
    await run_jobs(world, delivery, "success", range(700, 701))
    assert checks_of(world, 700) == []
    done = await world.report(L3_REPO, delivery, "completed", "success", run_id=500)
    assert done.status_code == 200
    assert checks_of(world, 500) == ["in_progress", "completed"]

    # One pull request moves only that entry, comments elsewhere kept.
    report = await sync_levels(world.runtime, promotions=False, device=None)
    assert report.opened == [L3_REPO], report
    (pull,) = world.sandbox.pulls(UPSTREAM)
    assert pull["title"] == f"[CRCR] Demote {L3_REPO} from L3 to L2"
    assert pull["head"] == BRANCH and pull["state"] == "open"
    proposed = world.sandbox.file_text(UPSTREAM, PATH, BRANCH) or ""
    diff = difflib.unified_diff(COMMENTED.splitlines(), proposed.splitlines(), lineterm="", n=0)
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == [f"+  - {L3_REPO}: [xpu-oncall]", f"-    {L3_REPO}: [xpu-oncall]"]
    assert proposed.startswith("# Backends of pytorch/pytorch") and "# results only" in proposed
    status = (await world.client.get("/api/crcr/level-status")).json()
    (xpu,) = [repo for repo in status["repos"] if repo["repo"] == L3_REPO]
    assert xpu["demoted"]["pr_url"].endswith(f"/web/{UPSTREAM}/pull/{pull['number']}")

    # A second sync changes nothing.
    before = writes(world.sandbox)
    again = await sync_levels(world.runtime, promotions=False, device=None)
    assert not again.changed and writes(world.sandbox) == before

    # Results recover (pass rate back to 90 %): the demotion ends, the PR is closed.
    await run_jobs(world, delivery, "success", range(800, 816))
    await levels()
    assert await demoted_gauge(world) == "0.0"
    closing = await sync_levels(world.runtime, promotions=False, device=None)
    assert closing.closed == [L3_REPO]
    (pull,) = world.sandbox.pulls(UPSTREAM)
    assert pull["state"] == "closed"
    (comment,) = world.sandbox.comments(UPSTREAM, pull["number"])
    assert "meets its level criteria again" in comment["body"]
    assert BRANCH not in world.sandbox.branches(UPSTREAM)

    # And check runs return.
    await run_jobs(world, delivery, "success", range(900, 901))
    assert checks_of(world, 900) == ["in_progress", "completed"]


async def test_the_sweeper_syncs_the_pull_requests_once_per_interval(world: World) -> None:
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await degrade(world, delivery)
    await world.settle()
    (pull,) = world.sandbox.pulls(UPSTREAM)
    assert pull["head"] == BRANCH

    await run_jobs(world, delivery, "failure", range(650, 651))  # new numbers for the body
    before = writes(world.sandbox) - oncall_comment_edits(world.sandbox)
    await world.settle()
    # The next sync waits CRCR_LEVELS_SYNC_INTERVAL (the oncall comment, kept current
    # whatever the level, SPEC §10.2, is no level sync).
    assert writes(world.sandbox) - oncall_comment_edits(world.sandbox) == before
