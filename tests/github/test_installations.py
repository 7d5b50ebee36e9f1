"""The App's installations are listed once and answer for every owner's repos."""

from __future__ import annotations

from crcr.github.client import GitHubClient
from crcr.sandbox.github_state import SandboxGitHub


async def test_one_listing_answers_for_every_owner_and_is_reused(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    github.install_app("acme/one", "acme/two", "other/three")

    for repo in ("acme/one", "acme/two", "other/three", "org/backend"):
        assert (await client.installation_token(repo)).startswith("ghs_")

    assert len(github.calls("GET", "/app/installations")) == 1
    assert github.calls("GET", "/repos/*/installation") == []


async def test_installations_without_a_login_do_not_break_the_lookup(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    """GitHub documents `account` as nullable, or an Enterprise (a slug, no login)."""
    ours = github.installation_of_repo("org/backend").id
    github.inject_fault(
        "/app/installations",
        method="GET",
        status=200,
        times=1,
        body=[
            {"id": 901, "account": None},
            {"id": 902, "account": {"slug": "octo-business", "name": "Octo Business"}},
            {"id": ours, "account": {"login": "org", "type": "Organization"}},
        ],
    )

    assert (await client.installation_token("org/backend")).startswith("ghs_")
