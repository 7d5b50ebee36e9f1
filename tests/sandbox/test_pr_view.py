"""The sandbox's own page for a pull request: where sandbox PR links lead instead of github.com."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from tests.sandbox.test_github_api import BASE, token_for

from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.pr_view import pr_view_routes

REPO = "org/upstream"
OLD, NEW = "a" * 40, "b" * 40


@pytest.fixture
def github() -> SandboxGitHub:
    sandbox = SandboxGitHub()
    sandbox.install_app(REPO)
    return sandbox


@pytest.fixture
async def http(github: SandboxGitHub) -> AsyncIterator[httpx.AsyncClient]:
    app = create_sandbox_app(github, extra_routes=pr_view_routes(github))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
        client.headers.update(await token_for(client, github, REPO))
        yield client


async def check_run(http: httpx.AsyncClient, name: str, sha: str, conclusion: str) -> None:
    body = {"name": name, "head_sha": sha, "status": "completed", "conclusion": conclusion}
    body["output"] = {"title": "<script>alert(1)</script>", "summary": "s"}
    assert (await http.post(f"/repos/{REPO}/check-runs", json=body)).status_code == 201


async def test_the_pull_requests_link_is_the_sandbox_page_showing_checks_labels_comments(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    github.record_pull_head(REPO, 7, head_sha=OLD, title="Fix the tail loop")
    await check_run(http, "crcr/acme/gate/build", OLD, "failure")
    github.record_pull_head(REPO, 7, head_sha=NEW, labels=("ciflow/crcr/gate",))
    await check_run(http, "crcr/acme/gate/build", NEW, "success")
    await http.post(f"/repos/{REPO}/issues/7/comments", json={"body": "acme/gate is red"})

    pull = (await http.get(f"/repos/{REPO}/pulls/7")).json()
    assert pull["html_url"] == f"{BASE}/web/{REPO}/pull/7"
    page = await http.get(pull["html_url"])

    assert page.status_code == 200
    text = page.text
    assert "Fix the tail loop" in text and "ciflow/crcr/gate" in text
    assert text.index(NEW[:12]) < text.index(OLD[:12])  # the newest head first
    assert "success" in text and "failure" in text
    assert "acme/gate is red" in text
    assert "<script>" not in text and "&lt;script&gt;" in text


async def test_a_pull_request_the_sandbox_never_saw_is_a_404_page_saying_so(
    http: httpx.AsyncClient,
) -> None:
    for path in (f"/web/{REPO}/pull/404", "/web/no/such-repo/pull/1"):
        page = await http.get(path)
        assert page.status_code == 404
        assert "has not seen this pull request" in page.text
