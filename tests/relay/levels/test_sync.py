"""`crcr levels sync` over the sandbox: one pull request per verdict, idempotent (SPEC §10.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.relay.callback_harness import sandbox_github_client

from crcr.github.pull_requests import PullRequests
from crcr.relay.allowlist.location import GitHubBlobLocation
from crcr.relay.allowlist.model import Level, parse_allowlist
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.demotion import Demotion
from crcr.relay.levels.status import BackendStatus, Criterion
from crcr.relay.levels.sync import LevelSync, SyncReport
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_state import SandboxGitHub
from crcr.stores.sqlite.state import SqliteStateStore

UPSTREAM = "pytorch/pytorch"
PATH = ".github/crcr-allowlist.yml"
ALLOWLIST = """\
# crcr allowlist
L2:
  - org/ready: [ready-oncall]    # a candidate
L3:
  xpu:
    org/xpu-backend: [xpu-oncall, second]   # Intel
L4:
  - org/critical: oncall1
"""
FAILING = (
    Criterion("job_pass_rate", 80.0, "≥ 90%", False),
    Criterion("timeout_rate", 0.0, "< 1%", True),
)
PASSING = (Criterion("job_pass_rate", 99.0, "≥ 90%", True),)


def status(
    repo: str, level: Level, change: str | None, criteria: tuple[Criterion, ...]
) -> BackendStatus:
    return BackendStatus(repo, level, change, False, 7, criteria)


@dataclass
class Upstream:
    sandbox: SandboxGitHub
    sync: LevelSync
    book: DemotionBook

    async def run(
        self, *statuses: BackendStatus, promotions: bool = False, device: str | None = None
    ) -> SyncReport:
        allowlist = parse_allowlist(self.sandbox.file_text(UPSTREAM, PATH) or "")
        by_repo = {s.repo.lower(): s for s in statuses}
        return await self.sync.run(by_repo, allowlist, promotions=promotions, device=device)

    def pulls(self, state: str = "all") -> list[dict[str, Any]]:
        return self.sandbox.pulls(UPSTREAM, state=state)


@pytest.fixture
async def upstream(tmp_path: Path) -> AsyncIterator[Upstream]:
    sandbox = SandboxGitHub(app=SandboxApp.generate())
    sandbox.install_app(UPSTREAM)
    sandbox.add_file(UPSTREAM, PATH, ALLOWLIST)
    store = await SqliteStateStore.open(tmp_path / "state.db")
    github = sandbox_github_client(sandbox, store)
    book = DemotionBook(store, cache_seconds=0)
    location = GitHubBlobLocation(UPSTREAM, "main", PATH)
    try:
        yield Upstream(sandbox, LevelSync(PullRequests(github, UPSTREAM), location, book), book)
    finally:
        await github.aclose()
        await store.close()


async def test_a_demote_verdict_opens_one_pull_request_moving_only_that_entry(
    upstream: Upstream,
) -> None:
    since = datetime(2026, 11, 25, tzinfo=UTC)
    await upstream.book._store.add_demotion(
        "org/xpu-backend", Demotion("org/xpu-backend", since, Level.L3).to_store()
    )
    report = await upstream.run(status("org/xpu-backend", Level.L3, "demote", FAILING))
    assert report.opened == ["org/xpu-backend"]

    (pull,) = upstream.pulls()
    assert pull["title"] == "[CRCR] Demote org/xpu-backend from L3 to L2"
    assert pull["head"] == "crcr-demotion/org/xpu-backend" and pull["base"] == "main"
    assert [label["name"] for label in pull["labels"]] == ["crcr-auto-demotion"]
    body = str(pull["body"])
    assert "| job pass rate | 80% | ≥ 90% | ❌ no |" in body
    assert "@xpu-oncall, @second" in body
    edited = upstream.sandbox.file_text(UPSTREAM, PATH, "crcr-demotion/org/xpu-backend")
    assert edited == ALLOWLIST.replace(
        "    org/xpu-backend: [xpu-oncall, second]   # Intel\n", ""
    ).replace(
        "    # a candidate\n",
        "    # a candidate\n  - org/xpu-backend: [xpu-oncall, second]   # Intel\n",
    )
    assert upstream.sandbox.file_text(UPSTREAM, PATH) == ALLOWLIST  # main untouched
    demotion = (await upstream.book.current())["org/xpu-backend"]
    # the sandbox links its pull requests to its own page of them (crcr.sandbox.pr_view)
    assert demotion.pr_url.endswith(f"/web/{UPSTREAM}/pull/{pull['number']}")


async def test_a_second_run_changes_nothing_and_new_numbers_refresh_the_body(
    upstream: Upstream,
) -> None:
    failing = status("org/xpu-backend", Level.L3, "demote", FAILING)
    await upstream.run(failing)
    writes = len(upstream.sandbox.calls("POST")) + len(upstream.sandbox.calls("PUT"))
    again = await upstream.run(failing)
    assert again.unchanged == ["org/xpu-backend"] and not again.changed
    assert len(upstream.sandbox.calls("POST")) + len(upstream.sandbox.calls("PUT")) == writes
    assert not upstream.sandbox.calls("PATCH")

    worse = (Criterion("job_pass_rate", 70.0, "≥ 90%", False),)
    refreshed = await upstream.run(status("org/xpu-backend", Level.L3, "demote", worse))
    assert refreshed.refreshed == ["org/xpu-backend"]
    (pull,) = upstream.pulls()
    assert "| job pass rate | 70% |" in str(pull["body"])


async def test_a_recovered_backend_has_its_pull_request_closed_and_branch_deleted(
    upstream: Upstream,
) -> None:
    await upstream.run(status("org/xpu-backend", Level.L3, "demote", FAILING))
    report = await upstream.run(status("org/xpu-backend", Level.L3, None, PASSING))
    assert report.closed == ["org/xpu-backend"]
    (pull,) = upstream.pulls()
    assert pull["state"] == "closed"
    (comment,) = upstream.sandbox.comments(UPSTREAM, int(pull["number"]))
    assert "meets its level criteria again" in comment["body"]
    assert "crcr-demotion/org/xpu-backend" not in upstream.sandbox.branches(UPSTREAM)
    assert not (await upstream.run(status("org/xpu-backend", Level.L3, None, PASSING))).changed


async def test_promotions_are_proposed_only_when_asked_and_need_a_device(
    upstream: Upstream,
) -> None:
    ready = status("org/ready", Level.L2, "promote", PASSING)
    assert not (await upstream.run(ready)).changed
    skipped = await upstream.run(ready, promotions=True)
    assert skipped.skipped == ["org/ready: moving it to L3 needs a device (--device)"]
    opened = await upstream.run(ready, promotions=True, device="xpu")
    assert opened.opened == ["org/ready"]
    (pull,) = upstream.pulls()
    assert pull["title"] == "[CRCR] Promote org/ready from L2 to L3"
    assert pull["head"] == "crcr-promotion/org/ready"
    edited = parse_allowlist(
        upstream.sandbox.file_text(UPSTREAM, PATH, "crcr-promotion/org/ready") or ""
    )
    assert edited.level_of("org/ready") == Level.L3 and edited.device_of("org/ready") == "xpu"
