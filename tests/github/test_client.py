"""The GitHub client against the sandbox: each call the relay makes, retries, typed errors."""

from __future__ import annotations

import httpx
import pytest

from crcr.github.client import GitHubClient, RerunOutcome
from crcr.github.errors import (
    GitHubError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubUnavailable,
    GitHubUnprocessable,
)
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_state import SandboxGitHub

from .conftest import ClientFactory, Clock, Sleeps

SHA = "c" * 40
DISPATCHES = "/repos/*/dispatches"


# --- the calls ---------------------------------------------------------------------------


async def test_a_dispatch_arrives_with_github_headers(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    await client.dispatch("org/backend", "pull_request", {"delivery_id": "d-1"})

    [dispatch] = github.dispatches("org/backend")
    [call] = github.calls("POST", DISPATCHES)
    assert (dispatch.event_type, dispatch.client_payload) == (
        "pull_request",
        {"delivery_id": "d-1"},
    )
    assert call.headers["accept"] == "application/vnd.github+json"
    assert call.headers["x-github-api-version"] == "2022-11-28"
    assert call.headers["user-agent"].startswith("crcr/")


async def test_check_runs_are_created_and_listed_across_pages(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    created = [
        await client.create_check_run(
            "org/backend", name=f"crcr/org/down/ci/job{i}", head_sha=SHA, status="in_progress"
        )
        for i in range(105)
    ]
    suite_id = created[0]["check_suite"]["id"]

    listed = await client.list_check_runs_in_suite("org/backend", suite_id)

    assert created[0]["status"] == "in_progress" and created[0]["head_sha"] == SHA
    assert sorted(run["id"] for run in listed) == sorted(run["id"] for run in created)
    assert len(github.calls("GET", "/repos/org/backend/check-suites/*")) == 2


async def test_a_rerun_starts_or_reports_already_running(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    run_id = github.add_workflow_run("org/backend", conclusion="failure")

    first = await client.rerun_failed_jobs("org/backend", run_id)
    second = await client.rerun_workflow("org/backend", run_id)

    assert first is RerunOutcome.STARTED
    assert second is RerunOutcome.ALREADY_RUNNING
    assert [r.kind for r in github.reruns()] == ["rerun-failed-jobs"]


async def test_a_rerun_github_forbids_for_another_reason_raises(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    run_id = github.add_workflow_run("org/backend")
    message = {"message": "Resource not accessible by integration"}
    github.inject_fault("/repos/*/actions/runs/*/rerun", status=403, body=message, times=1)

    with pytest.raises(GitHubForbidden, match="Resource not accessible"):
        await client.rerun_workflow("org/backend", run_id)
    with pytest.raises(GitHubNotFound):
        await client.rerun_workflow("org/backend", 123)


async def test_contents_round_trip_through_base64(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    data = bytes(range(256)) * 40
    github.add_file("org/backend", ".github/crcr/allowlist.yml", data, ref="v1")

    fetched = await client.get_contents("org/backend", ".github/crcr/allowlist.yml", "v1")

    assert fetched == data


async def test_a_file_too_large_to_inline_is_fetched_raw(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    data = b"0123456789abcdef" * 70_000  # 1.1 MB
    github.add_file("org/backend", "big.bin", data)

    fetched = await client.get_contents("org/backend", "big.bin")

    assert fetched == data
    assert github.calls(path="/repos/org/backend/contents/big.bin")[-1].headers["accept"] == (
        "application/vnd.github.raw"
    )


async def test_missing_contents_and_directories_are_errors(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    github.add_file("org/backend", "dir/file.txt", "x")

    with pytest.raises(GitHubNotFound) as missing:
        await client.get_contents("org/backend", "nope.txt")
    with pytest.raises(GitHubError, match="not a file"):
        await client.get_contents("org/backend", "dir")

    assert missing.value.call == "GET /repos/org/backend/contents/nope.txt"


async def test_commit_existence(client: GitHubClient, github: SandboxGitHub) -> None:
    sha = github.add_commit("org/backend")

    assert await client.commit_exists("org/backend", sha) is True
    assert await client.commit_exists("org/backend", "d" * 40) is False


async def test_the_repository_tells_its_default_branch(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    github.add_repo("org/trunk-based", default_branch="trunk")
    github.install_app("org/trunk-based")

    assert (await client.get_repo("org/trunk-based"))["default_branch"] == "trunk"


async def test_comments_are_listed_created_and_updated(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    created = await client.create_issue_comment("org/backend", 12, "<!-- crcr -->\nfailed")
    await client.create_issue_comment("org/backend", 12, "someone else")

    updated = await client.update_issue_comment("org/backend", created["id"], "<!-- crcr -->\nok")
    listed = await client.list_issue_comments("org/backend", 12)

    assert updated["body"].endswith("ok")
    assert [c["body"] for c in listed] == ["<!-- crcr -->\nok", "someone else"]


async def test_an_enterprise_base_url_with_a_path_prefix_is_joined_not_replaced(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client(api_prefix="/api/v3")
    sha = github.add_commit("org/backend")

    await client.dispatch("org/backend", "push", {})
    exists = await client.commit_exists("org/backend", sha)

    # The sandbox serves the API only under /api/v3: every answered call came through it.
    installation_id = github.installation_of_repo("org/backend").id
    assert exists
    assert [(c.call, c.status) for c in github.calls()] == [
        ("GET /app/installations", 200),
        (f"POST /app/installations/{installation_id}/access_tokens", 201),
        ("POST /repos/org/backend/dispatches", 204),
        (f"GET /repos/org/backend/commits/{sha}", 200),
    ]


async def test_one_app_jwt_signature_serves_every_app_call(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    for repo in ["org/backend", "org/other", "elsewhere/repo"]:
        await client.dispatch(repo, "push", {})

    assert len(github.calls("GET", "/app/installations")) == 1
    assert client.app_jwt.signatures_made == 1


@pytest.mark.parametrize("bad", ["noslash", "a/b/c", "../x", "o/..", "o/r?x=1"])
async def test_a_repo_that_is_not_owner_slash_name_is_refused_before_any_call(
    client: GitHubClient, github: SandboxGitHub, bad: str
) -> None:
    with pytest.raises(ValueError, match="owner/name"):
        await client.get_repo(bad)

    assert github.calls() == []


# --- typed errors ---------------------------------------------------------------------------


@pytest.mark.unlike_github
async def test_a_refused_dispatch_is_unprocessable_with_githubs_message(
    client: GitHubClient,
) -> None:
    with pytest.raises(GitHubUnprocessable) as caught:
        await client.dispatch("org/backend", "push", {str(i): i for i in range(11)})

    assert caught.value.call == "POST /repos/org/backend/dispatches"
    assert "No more than 10 properties" in caught.value.message
    assert "ghs_" not in str(caught.value)


# --- retries ----------------------------------------------------------------------------------


async def test_server_errors_are_retried_with_jittered_backoff(
    client: GitHubClient, github: SandboxGitHub, sleeps: Sleeps
) -> None:
    github.inject_fault(DISPATCHES, status=502, times=2)

    await client.dispatch("org/backend", "push", {})

    assert [c.status for c in github.calls("POST", DISPATCHES)] == [502, 502, 204]
    assert len(sleeps.delays) == 2
    assert 0 <= sleeps.delays[0] <= 0.5 and 0 <= sleeps.delays[1] <= 1.0
    assert len(github.dispatches()) == 1


async def test_persistent_unavailability_ends_in_a_typed_error_naming_the_call(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    github.inject_fault(DISPATCHES, status=503)

    with pytest.raises(GitHubUnavailable) as caught:
        await client.dispatch("org/backend", "push", {})

    assert (caught.value.call, caught.value.status) == ("POST /repos/org/backend/dispatches", 503)
    assert len(github.calls("POST", DISPATCHES)) == 4  # the first try and 3 retries


async def test_a_per_call_retry_budget_overrides_the_default(
    client: GitHubClient, github: SandboxGitHub
) -> None:
    github.inject_fault(DISPATCHES, status=503)

    with pytest.raises(GitHubUnavailable):
        await client.dispatch("org/backend", "push", {}, max_retries=1)

    assert len(github.calls("POST", DISPATCHES)) == 2


async def test_retry_after_is_honoured_exactly(
    client: GitHubClient, github: SandboxGitHub, sleeps: Sleeps
) -> None:
    github.inject_fault(DISPATCHES, status=429, retry_after=3, times=1)

    await client.dispatch("org/backend", "push", {})

    assert sleeps.delays == [3.0]
    assert len(github.dispatches()) == 1


async def test_a_long_retry_after_is_handed_back_rather_than_slept_on(
    client: GitHubClient, github: SandboxGitHub, sleeps: Sleeps
) -> None:
    github.inject_fault(DISPATCHES, status=429, retry_after=120)

    with pytest.raises(GitHubUnavailable) as caught:
        await client.dispatch("org/backend", "push", {})

    assert caught.value.retry_after == 120.0
    assert sleeps.delays == []
    assert len(github.calls("POST", DISPATCHES)) == 1


async def test_an_exhausted_rate_limit_waits_for_its_reset(
    client: GitHubClient, github: SandboxGitHub, sleeps: Sleeps, clock: Clock
) -> None:
    reset = int(clock.now) + 5
    github.inject_fault(
        DISPATCHES,
        status=403,
        times=1,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        body={"message": "API rate limit exceeded"},
    )

    await client.dispatch("org/backend", "push", {})

    assert sleeps.delays == [pytest.approx(reset - clock.now)]
    assert len(github.dispatches()) == 1


async def test_a_hanging_github_times_out_each_attempt_then_fails_typed(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client(timeout=0.05, max_retries=2)
    await client.installation_token("org/backend")
    github.inject_fault(DISPATCHES, hang=30)

    with pytest.raises(GitHubUnavailable) as caught:
        await client.dispatch("org/backend", "push", {})

    assert caught.value.status is None
    assert "no answer within 0.05 s" in caught.value.message
    assert [c.status for c in github.calls("POST", DISPATCHES)] == [None, None, None]


async def test_a_refused_connection_is_retried_then_reported(
    sleeps: Sleeps, app_identity: SandboxApp
) -> None:
    app = app_identity
    transport = httpx.AsyncHTTPTransport()
    async with GitHubClient(
        "http://127.0.0.1:9/api/v3",
        app.app_id,
        app.private_key_pem,
        None,
        transport=transport,
        sleep=sleeps,
        max_retries=1,
        timeout=2,
    ) as client:
        with pytest.raises(GitHubUnavailable) as caught:
            await client.installation_token("org/backend")

    assert caught.value.call == "GET /app/installations"
    assert "connection failed" in caught.value.message
    assert len(sleeps.delays) == 1
