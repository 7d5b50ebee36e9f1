"""The sandbox's `GET /repos/{o}/{r}/pulls/{n}/files`, as GitHub documents it, and the
relay's reading of it (SPEC §15 "Paths"): every page, and no more than GitHub lists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.github_description import mismatches
from tests.relay.callback_harness import sandbox_github_client

from crcr.github.client import GitHubClient
from crcr.relay.budgets.paths import changed_files
from crcr.sandbox.github_pull_files import set_pull_files
from crcr.sandbox.github_state import SandboxGitHub
from crcr.stores.sqlite.state import SqliteStateStore

UPSTREAM = "pytorch/pytorch"


@pytest.fixture
def sandbox() -> SandboxGitHub:
    github = SandboxGitHub()
    github.install_app(UPSTREAM)
    github.add_pull(UPSTREAM, 7, head_sha="ab" * 20)
    return github


@pytest.fixture
async def client(sandbox: SandboxGitHub, tmp_path: Path) -> AsyncIterator[GitHubClient]:
    store = await SqliteStateStore.open(tmp_path / "state.db")
    github = sandbox_github_client(sandbox, store, timeout=5.0)
    yield github
    await github.aclose()
    await store.close()


async def test_every_page_of_a_prs_files_is_read_and_answered_as_github_documents(
    sandbox: SandboxGitHub, client: GitHubClient
) -> None:
    files = [f"src/module_{n}.py" for n in range(250)]
    set_pull_files(sandbox, UPSTREAM, 7, files)

    assert await changed_files(client, UPSTREAM, 7) == files

    calls = [c for c in sandbox.calls() if c.path.endswith("/files")]
    assert len(calls) == 3
    assert mismatches(calls) == []


async def test_a_pr_with_more_files_than_github_lists_is_not_judged(
    sandbox: SandboxGitHub, client: GitHubClient
) -> None:
    set_pull_files(sandbox, UPSTREAM, 7, [f"docs/page_{n}.md" for n in range(3005)])

    assert await changed_files(client, UPSTREAM, 7) is None
    assert sum(1 for c in sandbox.calls() if c.path.endswith("/files")) == 30


async def test_a_missing_pr_is_not_found(client: GitHubClient) -> None:
    assert await changed_files(client, UPSTREAM, 404) is None
