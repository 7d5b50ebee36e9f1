"""The sandbox's compare API and push history (SPEC §9, §14), as GitHub documents them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.github_description import mismatches
from tests.relay import callback_harness
from tests.relay.callback_harness import StoreOpener, sandbox_github_client

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound
from crcr.relay.culprits.commits import commit_range, compare_commits
from crcr.sandbox.github_history import land_commit, side_commit
from crcr.sandbox.github_model import Dispatch
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.simulated_breakage import is_broken

opener = callback_harness.opener
UPSTREAM = "pytorch/pytorch"


@pytest.fixture
def sandbox() -> SandboxGitHub:
    github = SandboxGitHub()
    github.install_app(UPSTREAM)
    return github


@pytest.fixture
async def client(sandbox: SandboxGitHub, opener: StoreOpener) -> AsyncIterator[GitHubClient]:
    store = await opener.open()
    github = sandbox_github_client(sandbox, store)
    yield github
    await github.aclose()
    await store.close()


async def test_the_compare_lists_the_commits_after_base_oldest_first_across_pages(
    sandbox: SandboxGitHub, client: GitHubClient
) -> None:
    good = land_commit(sandbox, UPSTREAM, "Base")
    landed = [land_commit(sandbox, UPSTREAM, f"Change {n}", pr_number=n) for n in range(1, 131)]

    listed = await compare_commits(client, UPSTREAM, good, landed[-1])

    assert [c["sha"] for c in listed] == landed  # 100 on page 1, 30 on page 2
    assert listed[0]["commit"]["message"] == "Change 1 (#1)"
    assert listed[1]["parents"][0]["sha"] == landed[0]
    assert mismatches(sandbox.calls()) == []


async def test_a_merged_branch_s_commits_are_listed_but_the_range_keeps_the_first_parent_line(
    sandbox: SandboxGitHub, client: GitHubClient
) -> None:
    good = land_commit(sandbox, UPSTREAM, "Base")
    side = side_commit(sandbox, UPSTREAM, "Work on a branch", parent=good)
    first = land_commit(sandbox, UPSTREAM, "Change 1", pr_number=1)
    merge = land_commit(sandbox, UPSTREAM, "Merge pull request #2 from o/branch", merged=[side])
    last = land_commit(sandbox, UPSTREAM, "Change 3", pr_number=3)

    listed = await compare_commits(client, UPSTREAM, good, last)
    line = await commit_range(client, UPSTREAM, good, last)

    assert {c["sha"] for c in listed} == {side, first, merge, last}
    assert [c.sha for c in line] == [first, merge, last]
    assert [c.pr_number for c in line] == [1, 2, 3]
    assert mismatches(sandbox.calls()) == []


async def test_an_unknown_commit_is_not_found(sandbox: SandboxGitHub, client: GitHubClient) -> None:
    good = land_commit(sandbox, UPSTREAM, "Base")

    with pytest.raises(GitHubNotFound):
        await compare_commits(client, UPSTREAM, good, "f" * 40)


def test_a_backend_broken_from_a_commit_fails_there_and_after_but_not_before(
    sandbox: SandboxGitHub,
) -> None:
    shas = [land_commit(sandbox, UPSTREAM, f"Change {n}") for n in range(4)]

    def dispatch_of(sha: str) -> Dispatch:
        payload = {"after": sha, "repository": {"full_name": UPSTREAM}}
        return Dispatch("org/backend", "crcr_bisect", {"payload": payload}, 0.0)

    assert [is_broken(sandbox, dispatch_of(sha), shas[2]) for sha in shas] == [
        False,
        False,
        True,
        True,
    ]
