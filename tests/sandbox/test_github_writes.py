"""The sandbox writes a repository as GitHub documents it: refs, file commits, pulls, labels.

Paths, methods, status codes and required response fields follow @octokit/openapi
(api.github.com): git/get-ref, git/create-ref, git/update-ref, git/delete-ref,
repos/create-or-update-file-contents, pulls/list, pulls/create, pulls/update,
issues/add-labels.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import httpx
import pytest
from tests.sandbox.test_github_api import BASE, token_for

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_model import git_blob_sha
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub

REPO = "org/upstream"
PATH = ".github/allowlist.yml"
REF_FIELDS = {"ref", "node_id", "url", "object"}
PULL_FIELDS = {
    "_links", "assignee", "author_association", "auto_merge", "base", "body", "closed_at",
    "comments_url", "commits_url", "created_at", "diff_url", "head", "html_url", "id",
    "issue_url", "labels", "locked", "merge_commit_sha", "merged_at", "milestone", "node_id",
    "number", "patch_url", "review_comment_url", "review_comments_url", "state",
    "statuses_url", "title", "updated_at", "url", "user",
}  # fmt: skip
FULL_PULL_FIELDS = PULL_FIELDS | {
    "additions", "changed_files", "comments", "commits", "deletions", "maintainer_can_modify",
    "mergeable", "mergeable_state", "merged", "merged_by", "review_comments",
}  # fmt: skip
SIDE_FIELDS = {"label", "ref", "repo", "sha", "user"}
LABEL_FIELDS = {"color", "default", "description", "id", "name", "node_id", "url"}


@pytest.fixture
def github() -> SandboxGitHub:
    sandbox = SandboxGitHub(app=SandboxApp.generate(app_id=77))
    sandbox.install_app(REPO)
    sandbox.add_file(REPO, PATH, "L2:\n  - a/b\n")
    return sandbox


@pytest.fixture
async def http(github: SandboxGitHub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_sandbox_app(github))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        client.headers.update(await token_for(client, github, REPO))
        yield client


async def head(http: httpx.AsyncClient, branch: str) -> httpx.Response:
    return await http.get(f"/repos/{REPO}/git/ref/heads/{branch}")


async def test_a_branch_is_created_from_the_default_branch_head_and_deleted(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    main = await head(http, "main")
    assert main.status_code == 200 and main.json().keys() >= REF_FIELDS
    sha = main.json()["object"]["sha"]
    assert (await head(http, "crcr-demotion/a/b")).status_code == 404

    body = {"ref": "refs/heads/crcr-demotion/a/b", "sha": sha}
    created = await http.post(f"/repos/{REPO}/git/refs", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["ref"] == "refs/heads/crcr-demotion/a/b"
    assert (await http.post(f"/repos/{REPO}/git/refs", json=body)).status_code == 422
    assert github.file_text(REPO, PATH, "crcr-demotion/a/b") == "L2:\n  - a/b\n"

    deleted = await http.delete(f"/repos/{REPO}/git/refs/heads/crcr-demotion/a/b")
    assert deleted.status_code == 204
    again = await http.delete(f"/repos/{REPO}/git/refs/heads/crcr-demotion/a/b")
    assert again.status_code == 422
    assert "crcr-demotion/a/b" not in github.branches(REPO)


async def test_a_ref_pointing_at_nothing_known_is_refused(http: httpx.AsyncClient) -> None:
    body = {"ref": "refs/heads/x", "sha": "f" * 40}
    assert (await http.post(f"/repos/{REPO}/git/refs", json=body)).status_code == 422


async def test_a_file_commit_needs_the_current_blob_sha(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    url = f"/repos/{REPO}/contents/{PATH}"
    content = base64.b64encode(b"L3:\n  xpu:\n    a/b: []\n").decode()
    missing = await http.put(url, json={"message": "m", "content": content})
    assert missing.status_code == 422
    stale = await http.put(url, json={"message": "m", "content": content, "sha": "0" * 40})
    assert stale.status_code == 409

    before = (await head(http, "main")).json()["object"]["sha"]
    current = git_blob_sha(b"L2:\n  - a/b\n")
    updated = await http.put(url, json={"message": "move", "content": content, "sha": current})
    assert updated.status_code == 200, updated.text
    commit = updated.json()["commit"]
    assert commit["parents"][0]["sha"] == before
    assert updated.json()["content"]["sha"] == git_blob_sha(b"L3:\n  xpu:\n    a/b: []\n")
    assert (await head(http, "main")).json()["object"]["sha"] == commit["sha"]

    new = await http.put(f"/repos/{REPO}/contents/NEW.md", json={"message": "m", "content": ""})
    assert new.status_code == 201
    elsewhere = {"message": "m", "content": "", "branch": "nope"}
    assert (await http.put(f"/repos/{REPO}/contents/X", json=elsewhere)).status_code == 404
    assert github.file_text(REPO, "NEW.md") == ""


async def test_moving_a_branch_back_needs_force(http: httpx.AsyncClient) -> None:
    base = (await head(http, "main")).json()["object"]["sha"]
    await http.post(f"/repos/{REPO}/git/refs", json={"ref": "refs/heads/topic", "sha": base})
    content = base64.b64encode(b"changed\n").decode()
    await http.put(
        f"/repos/{REPO}/contents/{PATH}",
        json={"message": "m", "content": content, "branch": "topic",
              "sha": git_blob_sha(b"L2:\n  - a/b\n")},
    )  # fmt: skip
    back = {"sha": base}
    refused = await http.patch(f"/repos/{REPO}/git/refs/heads/topic", json=back)
    assert refused.status_code == 422
    forced = await http.patch(f"/repos/{REPO}/git/refs/heads/topic", json={**back, "force": True})
    assert forced.status_code == 200 and forced.json()["object"]["sha"] == base
    missing = await http.patch(f"/repos/{REPO}/git/refs/heads/gone", json=back)
    assert missing.status_code == 422


async def test_a_pull_request_is_opened_labelled_listed_and_closed(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    base = (await head(http, "main")).json()["object"]["sha"]
    await http.post(f"/repos/{REPO}/git/refs", json={"ref": "refs/heads/topic", "sha": base})
    body = {"title": "T", "head": "topic", "base": "main", "body": "B"}
    created = await http.post(f"/repos/{REPO}/pulls", json=body)
    assert created.status_code == 201, created.text
    pull = created.json()
    assert pull.keys() >= FULL_PULL_FIELDS
    assert pull["head"].keys() >= SIDE_FIELDS and pull["head"]["ref"] == "topic"
    assert pull["state"] == "open" and pull["user"]["login"].endswith("[bot]")
    assert (await http.post(f"/repos/{REPO}/pulls", json=body)).status_code == 422
    no_branch = {**body, "head": "nowhere"}
    assert (await http.post(f"/repos/{REPO}/pulls", json=no_branch)).status_code == 422

    number = pull["number"]
    labels = await http.post(f"/repos/{REPO}/issues/{number}/labels", json={"labels": ["x"]})
    assert labels.status_code == 200 and labels.json()[0].keys() >= LABEL_FIELDS

    listed = await http.get(f"/repos/{REPO}/pulls", params={"head": "org:topic"})
    assert [p["number"] for p in listed.json()] == [number]
    assert listed.json()[0].keys() >= PULL_FIELDS
    assert listed.json()[0]["labels"][0]["name"] == "x"
    assert (await http.get(f"/repos/{REPO}/pulls", params={"head": "org:other"})).json() == []

    closed = await http.patch(f"/repos/{REPO}/pulls/{number}", json={"state": "closed"})
    assert closed.status_code == 200 and closed.json()["closed_at"] is not None
    assert (await http.get(f"/repos/{REPO}/pulls")).json() == []
    everything = await http.get(f"/repos/{REPO}/pulls", params={"state": "all"})
    assert [p["state"] for p in everything.json()] == ["closed"]
    assert github.pulls(REPO)[0]["state"] == "closed"
    assert (await http.patch(f"/repos/{REPO}/pulls/999", json={"title": "x"})).status_code == 404
