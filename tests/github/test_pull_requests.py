"""Proposing a file change as a pull request, through the App, against the sandbox."""

from __future__ import annotations

from crcr.github.client import GitHubClient
from crcr.github.pull_requests import PullRequests
from crcr.sandbox.github_state import SandboxGitHub

REPO = "org/backend"
PATH = "config/allowlist.yml"


async def test_a_change_goes_on_its_own_branch_and_becomes_a_labelled_pull_request(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    github.add_file(REPO, PATH, "L2:\n  - a/b\n")
    pulls = PullRequests(client, REPO)
    base = await pulls.branch_head("main")
    assert base is not None and await pulls.branch_head("topic/x") is None

    await pulls.create_branch("topic/x", base)
    current = await pulls.read_file(PATH, "topic/x")
    assert current.text == "L2:\n  - a/b\n"
    commit = await pulls.write_file(
        PATH, "topic/x", "L3:\n  xpu:\n    a/b: []\n", sha=current.sha, message="Move a/b"
    )
    assert await pulls.branch_head("topic/x") == commit
    assert github.file_text(REPO, PATH) == "L2:\n  - a/b\n"  # main untouched

    created = await pulls.create_pull("topic/x", "main", "Move a/b", "Because.")
    await pulls.add_label(created["number"], "crcr-auto-demotion")
    (listed,) = await pulls.open_pulls()
    assert listed["head"]["ref"] == "topic/x"
    assert [label["name"] for label in listed["labels"]] == ["crcr-auto-demotion"]

    await pulls.comment(created["number"], "Closing: recovered.")
    await pulls.update_pull(created["number"], state="closed")
    assert await pulls.open_pulls() == []
    assert github.comments(REPO, created["number"])[0]["body"] == "Closing: recovered."


async def test_a_branch_is_reset_and_deleted_and_a_second_delete_says_so(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    github.add_file(REPO, PATH, "one\n")
    pulls = PullRequests(client, REPO)
    base = await pulls.branch_head("main")
    assert base is not None
    await pulls.create_branch("topic", base)
    blob = (await pulls.read_file(PATH, "topic")).sha
    await pulls.write_file(PATH, "topic", "two\n", sha=blob, message="two")

    await pulls.reset_branch("topic", base)
    assert (await pulls.read_file(PATH, "topic")).text == "one\n"
    assert await pulls.delete_branch("topic") is True
    assert await pulls.delete_branch("topic") is False
