"""Issue 29's level scenarios over the sandbox, on Redis and on SQLite state (SPEC §10.2).

Each test is one story an upstream maintainer lived through and found broken: a demotion
pull request that strips the pins binding a backend's tokens, four stories about one
backend, a demotion that cannot be declined, an L4 entry that has no device.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    DEVICE_LABEL,
    L2_REPO,
    L3_REPO,
    L4_REPO,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)
from tests.relay.governance.steps import merge_allowlist
from tests.waiting import eventually

from crcr.cli.levels import sync_levels
from crcr.github.pull_requests import PullRequests
from crcr.relay.allowlist.model import Level, TokenConstraints, parse_allowlist
from crcr.relay.doctor.checks import Subject, diagnose
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.governance import LevelGovernance
from crcr.relay.levels.wiring import level_status_service
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks.objects import stable_id
from crcr.sandbox.webhooks.pull_requests import pull_request_event

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app

PATH = ".github/crcr-allowlist.yml"
BLOB_URL = f"https://github.com/{UPSTREAM}/blob/main/{PATH}"
L3_PINS = TokenConstraints(
    str(stable_id(L3_REPO)), f"{L3_REPO}/.github/workflows/crcr.yml@*", "refs/heads/main"
)
PINNED = f"""\
# Backends of pytorch/pytorch, reviewed by the CI team.
L2:
  - {L2_REPO}
L3:
  xpu:
    {L3_REPO}:   # Intel's runners; the pins bind its tokens
      oncalls: [xpu-oncall]
      events: [pull_request]
      repository_id: {L3_PINS.repository_id}
      workflow: "{L3_PINS.workflow}"
      ref: {L3_PINS.ref}
L4:
  - {L4_REPO}: oncall1, oncall2
"""


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> AsyncIterator[World]:
    sandbox = installed_sandbox(sandbox_app)
    sandbox.add_file(UPSTREAM, PATH, PINNED)
    async with open_world(opener, tmp_path, sandbox, signing_key, BLOB_URL) as opened:
        levels = opened.runtime.levels
        assert levels is not None
        levels.sync_interval = 0  # the pull requests wait for `crcr levels sync`
        yield opened


def doctor_subject(world: World, repo: str) -> Subject:
    """What `crcr doctor REPO` reads, opened on the world's store and allowlist."""
    runtime = world.runtime
    return Subject(
        repo=repo,
        settings=runtime.settings,
        store=runtime.store,
        allowlist=runtime.allowlist,
        allowlist_source=BLOB_URL,
        app=None,
        app_problem="not asked in this test",
        levels=lambda: level_status_service(runtime.settings, runtime.store, runtime.allowlist),
    )


async def run_jobs(world: World, repo: str, delivery: str, conclusion: str, runs: range) -> None:
    """Jobs of `repo` that start and finish, each in a run of its own."""
    for run_id in runs:
        started = await world.report(repo, delivery, "in_progress", run_id=run_id)
        assert started.status_code == 200, started.text
        done = await world.report(repo, delivery, "completed", conclusion, run_id=run_id)
        assert done.status_code == 200, done.text


async def test_a_demotion_pull_request_keeps_every_pin_of_the_entry(world: World) -> None:
    """Defect 5: the level edit dropped `repository_id`, `workflow` and `ref`."""
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await run_jobs(world, L3_REPO, delivery, "failure", range(600, 602))
    levels = world.runtime.levels
    assert levels is not None
    await levels()

    report = await sync_levels(world.runtime, promotions=False, device=None)

    assert report.opened == [L3_REPO], report
    proposed = world.sandbox.file_text(UPSTREAM, PATH, f"crcr-demotion/{L3_REPO}") or ""
    before = parse_allowlist(PINNED).entry(L3_REPO)
    after = parse_allowlist(proposed).entry(L3_REPO)
    assert before is not None and after is not None
    assert after.level == Level.L2
    assert after.constraints == L3_PINS
    assert (after.oncalls, after.events) == (before.oncalls, before.events)
    assert "# Intel's runners; the pins bind its tokens" in proposed


def check_statuses(world: World, run_id: int) -> list[str]:
    """The statuses of the check runs created for one downstream run."""
    return [
        run["status"] for run in world.check_runs() if run["external_id"].startswith(f"{run_id}:")
    ]


async def demote(world: World, repo: str, delivery: str) -> None:
    """`repo`'s jobs fail until its level status says demote; the demotion starts."""
    await run_jobs(world, repo, delivery, "failure", range(600, 602))
    levels = world.runtime.levels
    assert levels is not None
    await levels()
    assert repo.lower() in await world.runtime.demotions.current()  # type: ignore[union-attr]


async def test_a_demoted_l4_entry_without_a_device_is_gated_on_its_name_and_proposed(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """Defect 4: no device meant a label no PR could carry, and no pull request ever."""
    delivery = await world.pull_request()
    await demote(world, L4_REPO, delivery)

    # New jobs are L3's now: not on an unlabelled PR, but on one labelled by the name.
    await run_jobs(world, L4_REPO, delivery, "success", range(700, 701))
    assert check_statuses(world, 700) == []
    await world.label("ciflow/crcr/critical")
    await run_jobs(world, L4_REPO, delivery, "success", range(701, 702))
    assert check_statuses(world, 701)[-1] == "completed"

    # Its demotion pull request moves it under `L3: critical:`, and nothing is skipped.
    report = await sync_levels(world.runtime, promotions=False, device=None)
    assert report.opened == [L4_REPO] and report.skipped == [], report
    proposed = world.sandbox.file_text(UPSTREAM, PATH, f"crcr-demotion/{L4_REPO}") or ""
    assert parse_allowlist(proposed).device_of(L4_REPO) == "critical"
    assert f"  critical:\n    {L4_REPO}: oncall1, oncall2\n" in proposed
    page = (await world.client.get("/crcr/levels")).text
    assert "not opened yet" not in page


async def test_closing_a_demotion_pull_request_unmerged_declines_the_demotion(
    world: World,
) -> None:
    """Defect 3: the demotion went on, and the next sync opened a new pull request."""
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await demote(world, L3_REPO, delivery)
    await sync_levels(world.runtime, promotions=False, device=None)
    (pull,) = world.sandbox.pulls(UPSTREAM)

    # A maintainer closes it without merging: GitHub sends `closed`, merged false.
    await PullRequests(world.runtime.github, UPSTREAM).update_pull(pull["number"], state="closed")
    closed = pull_request_event(
        "closed", repo=UPSTREAM, number=pull["number"], head_ref=pull["head"], author="maintainer"
    )
    assert (await world.webhook("pull_request", closed)).status_code == 200

    # The demotion ends at once: new jobs get their check runs again.
    await run_jobs(world, L3_REPO, delivery, "success", range(700, 701))
    assert check_statuses(world, 700)[-1] == "completed"
    # The level status says who declined, when, and until when (CRCR_DEMOTION_SNOOZE).
    status = (await world.client.get("/api/crcr/level-status")).json()
    (xpu,) = [repo for repo in status["repos"] if repo["repo"] == L3_REPO]
    assert xpu["demoted"] is None
    declined = xpu["declined"]
    assert declined["by"] == "maintainer"
    at, until = (
        datetime.fromisoformat(declined[k].replace("Z", "+00:00")) for k in ("at", "until")
    )
    assert until - at == timedelta(days=7)
    # Neither the sweeper's refresh nor the next sync demotes it or opens a new PR.
    levels = world.runtime.levels
    assert levels is not None
    await levels()
    again = await sync_levels(world.runtime, promotions=False, device=None)
    assert again.opened == [] and len(again.snoozed) == 1, again
    assert [p["state"] for p in world.sandbox.pulls(UPSTREAM)] == ["closed"]
    assert await world.runtime.demotions.current() == {}  # type: ignore[union-attr]
    # The audit trail records it.
    audit = world.runtime.audit
    assert audit is not None
    await audit.flush()
    entries = await world.runtime.store.audit_entries(L3_REPO.lower())
    (entry,) = [e for e in entries if e["kind"] == "level"]
    assert (entry["decision"], entry["subject"]) == ("declined", "maintainer")


def without_time(status: dict[str, Any]) -> dict[str, Any]:
    return {**status, "generated_at": None}


async def test_the_cli_the_api_and_the_pages_tell_one_story_about_a_backend(
    world: World,
) -> None:
    """Defect 6: `crcr levels status` listed a removed backend, left out L1 and showed
    `demoted: null`; the history kept no demotion; the backend page said "L3 · Check runs"."""
    l1_repo = "org/dispatch-only"
    world.sandbox.install_app(l1_repo)
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await run_jobs(world, L2_REPO, delivery, "success", range(300, 301))  # the HUD knows it
    await demote(world, L3_REPO, delivery)
    # The L2 backend is removed from the allowlist and an L1 one added.
    world.sandbox.add_file(
        UPSTREAM, PATH, PINNED.replace(f"L2:\n  - {L2_REPO}", f"L1:\n  - {l1_repo}")
    )
    source = world.runtime.allowlist.__self__  # type: ignore[attr-defined]
    await source.announce_change("test")

    # The backend page: L3 on the allowlist, its new jobs treated as L2 meanwhile.
    page = (await world.client.get(f"/crcr/{L3_REPO}")).text
    assert "Check runs ·" not in page  # it said "L3 · Check runs" for a demoted backend
    assert 'data-standing="lowered"' in page and "L2 · Reporting" in page
    assert "temporarily demoted since" in page
    # The API: every allowlisted backend, L1 included, the removed one gone; the
    # demotion is an episode of the level history.
    api = (await world.client.get("/api/crcr/level-status")).json()
    repos = {repo["repo"]: repo for repo in api["repos"]}
    assert set(repos) == {l1_repo, L3_REPO, L4_REPO}
    xpu = repos[L3_REPO]
    assert xpu["demoted"] is not None and xpu["effectiveLevel"] == "L2"
    episodes = [(e["kind"], e["detail"], e["end"]) for e in xpu["episodes"]]
    assert episodes == [("level", "L3", None), ("demotion", "L3 → L2", None)]
    levels_page = (await world.client.get("/crcr/levels")).text
    assert 'data-episode="demotion"' in levels_page
    # `crcr levels status` reads the same source and prints the same JSON.
    runtime = world.runtime
    async with level_status_service(runtime.settings, runtime.store, runtime.allowlist) as service:
        printed = await service.status()
    assert without_time(printed) == without_time(api)
    # `crcr doctor` tells the same story.
    checks = await diagnose(doctor_subject(world, L3_REPO))
    (level,) = [check for check in checks if check.name == "level"]
    assert "treated as L2" in level.answer and "temporarily demoted" in level.answer


async def test_an_override_holds_on_every_instance_within_5_s_and_shows_everywhere(
    world: World,
) -> None:
    """RFC-0050's temporary downgrade: set on one instance, followed by all, audited."""
    runtime = world.runtime
    book = runtime.demotions
    assert book is not None
    assert await book.level_for_job(L4_REPO, Level.L4, None) == Level.L4  # cached here
    # Another instance (or `crcr levels override`) sets it in the shared store.
    elsewhere = LevelGovernance(DemotionBook(runtime.store), snooze_seconds=60)
    allowlist = await runtime.allowlist()
    await elsewhere.set_override(
        allowlist, L4_REPO, Level.L2, timedelta(days=3), "runner fleet migration", "ops"
    )

    async def lowered() -> bool:
        return await book.level_for_job(L4_REPO, Level.L4, None) == Level.L2

    assert await eventually(lowered, within=5.0, what="the override on this instance") < 5.0
    delivery = await world.pull_request()
    await run_jobs(world, L4_REPO, delivery, "success", range(800, 801))
    assert check_statuses(world, 800) == []  # L2: no check runs

    status = (await world.client.get("/api/crcr/level-status")).json()
    (critical,) = [repo for repo in status["repos"] if repo["repo"] == L4_REPO]
    assert critical["effectiveLevel"] == "L2"
    assert critical["override"] | {"until": None} == {
        "level": "L2", "until": None, "reason": "runner fleet migration", "by": "ops"
    }  # fmt: skip
    assert "data-override" in (await world.client.get("/crcr/levels")).text
    assert "runner fleet migration" in (await world.client.get(f"/crcr/{L4_REPO}")).text
    checks = await diagnose(doctor_subject(world, L4_REPO))
    (level,) = [check for check in checks if check.name == "level"]
    assert "override to L2" in level.answer and "runner fleet migration" in level.answer

    assert await elsewhere.clear_override(L4_REPO, "ops") is True

    async def restored() -> bool:
        return await book.level_for_job(L4_REPO, Level.L4, None) == Level.L4

    await eventually(restored, within=5.0, what="the override cleared on this instance")
    status = (await world.client.get("/api/crcr/level-status")).json()
    (critical,) = [repo for repo in status["repos"] if repo["repo"] == L4_REPO]
    (episode,) = [e for e in critical["episodes"] if e["kind"] == "override"]
    assert critical["override"] is None and episode["end"] is not None


async def test_a_demotion_pull_request_of_a_backend_taken_off_the_allowlist_is_closed(
    world: World,
) -> None:
    """Found by the model test: the pull request stayed open, and merging it would have
    brought back the entry a maintainer had removed."""
    delivery = await world.pull_request(labels=(DEVICE_LABEL,))
    await demote(world, L3_REPO, delivery)
    await sync_levels(world.runtime, promotions=False, device=None)
    (pull,) = world.sandbox.pulls(UPSTREAM)

    removed = PINNED.split("L3:")[0] + "L4:" + PINNED.split("L4:")[1]
    await merge_allowlist(world, removed)
    report = await sync_levels(world.runtime, promotions=False, device=None)

    assert report.closed == [L3_REPO], report
    (closed,) = world.sandbox.pulls(UPSTREAM)
    assert closed["state"] == "closed" and not closed.get("merged")
    (comment,) = world.sandbox.comments(UPSTREAM, pull["number"])
    assert f"`{L3_REPO}` is no longer on the allowlist" in comment["body"]
    assert pull["head"] not in world.sandbox.branches(UPSTREAM)
    assert await world.runtime.demotions.current() == {}  # type: ignore[union-attr]
