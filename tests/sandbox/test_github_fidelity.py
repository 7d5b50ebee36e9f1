"""The sandbox against GitHub's published description: every REST call the relay's client
makes, and every answer the sandbox gives, as `@octokit/openapi` documents them.

The tour below calls each operation of `crcr.github.GitHubClient` over the sandbox;
the check is data-driven over the sandbox's call log, so an operation added to the
client (and to this tour) is checked without more code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.github_description import mismatches, operation_of, schema_errors
from tests.relay import callback_harness
from tests.relay.callback_harness import StoreOpener, sandbox_github_client

from crcr.github.client import GitHubClient
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.webhooks import (
    branch_deletion,
    branch_push,
    check_run_event,
    check_suite_event,
    pull_request_event,
    tag_push,
)

opener = callback_harness.opener
UPSTREAM = "pytorch/pytorch"
DOWNSTREAM = "org/backend"


@pytest.fixture
def sandbox() -> SandboxGitHub:
    github = SandboxGitHub()
    github.install_app(UPSTREAM, DOWNSTREAM)
    return github


@pytest.fixture
async def client(sandbox: SandboxGitHub, opener: StoreOpener) -> AsyncIterator[GitHubClient]:
    store = await opener.open()
    github = sandbox_github_client(sandbox, store)
    yield github
    await github.aclose()
    await store.close()


async def test_every_call_of_the_relays_client_and_every_answer_is_as_github_documents(
    sandbox: SandboxGitHub, client: GitHubClient
) -> None:
    sha = sandbox.add_commit(UPSTREAM)
    sandbox.add_file(UPSTREAM, ".github/crcr/allowlist.yaml", "L1:\n  - org/backend\n")
    run_id, other_run_id = (
        sandbox.add_workflow_run(DOWNSTREAM),
        sandbox.add_workflow_run(DOWNSTREAM),
    )

    await client.dispatch(DOWNSTREAM, "pull_request", {"delivery_id": "d-1", "payload": {}})
    run = await client.create_check_run(
        UPSTREAM, name="crcr/org/backend/ci/test", head_sha=sha, status="in_progress"
    )
    await client.list_check_runs_in_suite(UPSTREAM, run["check_suite"]["id"])
    await client.rerun_failed_jobs(DOWNSTREAM, run_id)
    # A second re-run of the same run gets GitHub's undocumented 403 "already running".
    await client.rerun_workflow(DOWNSTREAM, other_run_id)
    assert await client.get_contents(UPSTREAM, ".github/crcr/allowlist.yaml")
    assert await client.commit_exists(UPSTREAM, sha)
    assert not await client.commit_exists(UPSTREAM, "0" * 40)
    await client.get_repo(UPSTREAM)
    comment = await client.create_issue_comment(UPSTREAM, 7, "<!-- crcr --> failing")
    await client.update_issue_comment(UPSTREAM, comment["id"], "<!-- crcr --> still failing")
    await client.list_issue_comments(UPSTREAM, 7)

    calls = sandbox.calls()
    assert {call.path.split("/")[1] for call in calls} == {"app", "repos"}
    assert mismatches(calls) == []


def test_the_description_knows_the_operations_the_relay_uses() -> None:
    assert operation_of("POST", "/repos/o/r/dispatches") == "/repos/{owner}/{repo}/dispatches"
    assert operation_of("GET", "/repos/o/r/contents/a/b.yaml") == (
        "/repos/{owner}/{repo}/contents/{path}"
    )
    assert operation_of("POST", "/repos/o/r/no-such-thing") is None


def webhook_schema_errors(payload: dict[str, Any], webhook: str) -> list[str]:
    return schema_errors(
        payload, "webhooks", webhook, "post", "requestBody", "content", "application/json", "schema"
    )


@pytest.mark.parametrize(
    "action", ["opened", "synchronize", "reopened", "closed", "edited", "labeled"]
)
def test_the_sandboxs_pull_request_payloads_match_githubs_webhook_schema(action: str) -> None:
    payload = pull_request_event(action, repo=UPSTREAM, number=12, label_name="ciflow/crcr/xpu")

    assert webhook_schema_errors(payload, f"pull-request-{action}") == []


@pytest.mark.parametrize(
    ("payload", "webhook"),
    [
        (branch_push("main"), "push"),
        (tag_push(), "push"),
        (branch_deletion("old-feature"), "push"),
        (check_run_event(), "check-run-rerequested"),
        (check_suite_event(), "check-suite-rerequested"),
    ],
    ids=["push", "tag", "deletion", "check_run", "check_suite"],
)
def test_the_sandboxs_other_payloads_match_githubs_webhook_schemas(
    payload: dict[str, Any], webhook: str
) -> None:
    assert webhook_schema_errors(payload, webhook) == []
