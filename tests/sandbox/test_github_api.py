"""The sandbox GitHub answers like GitHub's REST API, logs every call, and misbehaves on demand."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub

BASE = "http://sandbox.test"
SHA = "a" * 40


class Clock:
    """A clock tests move by hand."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def app_identity() -> SandboxApp:
    return SandboxApp.generate(app_id=4242)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def github(app_identity: SandboxApp, clock: Clock) -> SandboxGitHub:
    sandbox = SandboxGitHub(app=app_identity, clock=clock)
    sandbox.install_app("org/backend", "org/other")
    sandbox.install_app("elsewhere/repo")
    return sandbox


@pytest.fixture
async def http(github: SandboxGitHub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_sandbox_app(github))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        yield client


def app_jwt(app: SandboxApp, now: float, **overrides: Any) -> str:
    claims: dict[str, Any] = {"iat": int(now) - 60, "exp": int(now) + 540, "iss": str(app.app_id)}
    claims.update(overrides)
    key = claims.pop("key", app.private_key_pem)
    return jwt.encode(claims, key, algorithm="RS256")


def as_app(github: SandboxGitHub, **overrides: Any) -> dict[str, str]:
    return {"authorization": f"Bearer {app_jwt(github.app, github.clock(), **overrides)}"}


async def token_for(http: httpx.AsyncClient, github: SandboxGitHub, repo: str) -> dict[str, str]:
    installation = await http.get(f"/repos/{repo}/installation", headers=as_app(github))
    response = await http.post(
        f"/app/installations/{installation.json()['id']}/access_tokens", headers=as_app(github)
    )
    return {"authorization": f"token {response.json()['token']}"}


# --- App authentication ------------------------------------------------------------


async def test_a_valid_app_jwt_finds_the_installation_of_a_repo(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    response = await http.get("/repos/org/backend/installation", headers=as_app(github))

    assert response.status_code == 200
    assert response.json()["id"] == github.installation_of_repo("org/backend").id
    assert response.json()["account"]["login"] == "org"
    assert response.json()["app_id"] == 4242


async def test_repos_of_one_owner_share_an_installation(github: SandboxGitHub) -> None:
    assert github.installation_of_repo("org/backend") == github.installation_of_repo("org/other")
    assert github.installation_of_repo("org/backend") != github.installation_of_repo(
        "elsewhere/repo"
    )


async def test_a_repo_without_the_app_has_no_installation(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    response = await http.get("/repos/org/not-installed/installation", headers=as_app(github))

    assert response.status_code == 404
    assert response.json()["message"] == "Not Found"


@pytest.mark.parametrize(
    ("problem", "overrides"),
    [
        ("signed by another key", {"key": SandboxApp.generate().private_key_pem}),
        ("another app's id", {"iss": "1"}),
        ("expired", {"exp": -1}),
        ("expiring more than 10 minutes ahead", {"exp": 1200}),
        ("issued in the future", {"iat": 600}),
    ],
)
async def test_a_bad_app_jwt_is_refused_with_401(
    http: httpx.AsyncClient, github: SandboxGitHub, problem: str, overrides: dict[str, Any]
) -> None:
    now = int(github.clock())
    relative = {k: now + v if k in ("exp", "iat") else v for k, v in overrides.items()}

    response = await http.get("/repos/org/backend/installation", headers=as_app(github, **relative))

    assert response.status_code == 401, problem


async def test_a_request_without_credentials_is_refused(http: httpx.AsyncClient) -> None:
    response = await http.get("/repos/org/backend/installation")

    assert response.status_code == 401
    assert response.json()["message"] == "Requires authentication"


async def test_an_installation_token_lasts_an_hour(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    installation_id = github.installation_of_repo("org/backend").id

    response = await http.post(
        f"/app/installations/{installation_id}/access_tokens", headers=as_app(github)
    )

    body = response.json()
    assert response.status_code == 201
    assert body["token"].startswith("ghs_")
    expires = time.mktime(time.strptime(body["expires_at"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert expires == pytest.approx(github.clock() + 3600, abs=2)
    assert body["permissions"]["checks"] == "write"


# --- installation tokens ----------------------------------------------------------


async def test_an_unknown_token_is_refused(http: httpx.AsyncClient) -> None:
    response = await http.get("/repos/org/backend", headers={"authorization": "token ghs_nope"})

    assert response.status_code == 401
    assert response.json()["message"] == "Bad credentials"


async def test_an_expired_token_is_refused(
    http: httpx.AsyncClient, github: SandboxGitHub, clock: Clock
) -> None:
    headers = await token_for(http, github, "org/backend")
    assert (await http.get("/repos/org/backend", headers=headers)).status_code == 200

    clock.now += 3601

    assert (await http.get("/repos/org/backend", headers=headers)).status_code == 401


async def test_a_token_only_reaches_its_installations_repos(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")

    assert (await http.get("/repos/org/other", headers=headers)).status_code == 200
    assert (await http.get("/repos/elsewhere/repo", headers=headers)).status_code == 404


async def test_the_bearer_scheme_works_for_tokens_too(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    token = (await token_for(http, github, "org/backend"))["authorization"].split()[1]

    response = await http.get("/repos/org/backend", headers={"authorization": f"Bearer {token}"})

    assert response.status_code == 200
    assert response.json()["default_branch"] == "main"
    assert response.json()["full_name"] == "org/backend"


# --- dispatches -------------------------------------------------------------------------


async def test_a_dispatch_is_accepted_recorded_and_announced(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    heard: list[str] = []
    github.add_dispatch_listener(lambda dispatch: heard.append(dispatch.repo))
    headers = await token_for(http, github, "org/backend")

    response = await http.post(
        "/repos/org/backend/dispatches",
        headers=headers,
        json={"event_type": "pull_request", "client_payload": {"delivery_id": "d-1"}},
    )

    assert response.status_code == 204
    assert [(d.event_type, d.client_payload) for d in github.dispatches("org/backend")] == [
        ("pull_request", {"delivery_id": "d-1"})
    ]
    assert heard == ["org/backend"]


async def test_a_recorded_dispatch_reads_back_the_payload_as_sent(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")
    # An integer past 64 bits (orjson refuses it, json reads it) and an absent payload.
    sent = b'{"event_type":"x","client_payload":{"id":18446744073709551616,"ok":[true,null]}}'

    await http.post("/repos/org/backend/dispatches", headers=headers, content=sent)
    await http.post("/repos/org/backend/dispatches", headers=headers, json={"event_type": "y"})

    first, second = github.dispatches("org/backend")
    assert first.client_payload == {"id": 2**64, "ok": [True, None]}
    assert first.client_payload is first.client_payload  # parsed once, then kept
    assert (second.event_type, second.client_payload) == ("y", {})


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        ({"client_payload": {}}, "event_type"),
        ({"event_type": "x", "client_payload": {str(i): i for i in range(11)}}, "10 properties"),
        ({"event_type": "x", "client_payload": {"big": "x" * 70_000}}, "too large"),
        # 65,536 bytes of compact JSON: one past GitHub's limit.
        ({"event_type": "x", "client_payload": {"big": "x" * 65_526}}, "too large"),
        # 22 KB as UTF-8, but 66 KB as JSON with non-ASCII escaped, as it is measured.
        ({"event_type": "x", "client_payload": {"big": "é" * 11_000}}, "too large"),
        ({"event_type": "x", "client_payload": [1]}, "not an object"),
    ],
)
async def test_a_dispatch_github_would_refuse_gets_422(
    http: httpx.AsyncClient, github: SandboxGitHub, body: dict[str, Any], complaint: str
) -> None:
    headers = await token_for(http, github, "org/backend")

    response = await http.post("/repos/org/backend/dispatches", headers=headers, json=body)

    assert response.status_code == 422
    assert complaint in response.json()["message"]
    assert github.dispatches() == []


async def test_a_client_payload_of_exactly_65535_bytes_is_accepted(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")
    payload = {"big": "x" * 65_517, "n": 1.5}
    body = {"event_type": "x", "client_payload": payload}

    response = await http.post("/repos/org/backend/dispatches", headers=headers, json=body)

    assert len(json.dumps(payload, separators=(",", ":"))) == 65_535
    assert response.status_code == 204


async def test_a_body_that_is_not_json_gets_400(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")

    response = await http.post("/repos/org/backend/dispatches", headers=headers, content=b"{nope")

    assert response.status_code == 400
    assert response.json()["message"] == "Problems parsing JSON"


# --- contents and commits -----------------------------------------------------------------


async def test_contents_come_base64_in_60_character_lines_with_the_blob_sha(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    data = bytes(range(256)) * 3
    github.add_file("org/backend", ".github/allowlist.yml", data, ref="main")
    headers = await token_for(http, github, "org/backend")

    response = await http.get(
        "/repos/org/backend/contents/.github/allowlist.yml", params={"ref": "main"}, headers=headers
    )

    body = response.json()
    lines = body["content"].split("\n")
    assert body["encoding"] == "base64"
    assert all(len(line) == 60 for line in lines[:-2]) and lines[-1] == ""
    assert base64.b64decode(body["content"]) == data
    expected_sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert body["sha"] == expected_sha
    assert body["size"] == len(data)


async def test_contents_are_per_ref_and_404_when_absent(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    github.add_file("org/backend", "a.txt", "on main")
    github.add_file("org/backend", "a.txt", "on dev", ref="dev")
    headers = await token_for(http, github, "org/backend")

    on_default = await http.get("/repos/org/backend/contents/a.txt", headers=headers)
    on_dev = await http.get("/repos/org/backend/contents/a.txt?ref=dev", headers=headers)
    missing = await http.get("/repos/org/backend/contents/b.txt", headers=headers)

    assert base64.b64decode(on_default.json()["content"]) == b"on main"
    assert base64.b64decode(on_dev.json()["content"]) == b"on dev"
    assert missing.status_code == 404


async def test_a_directory_lists_its_files(http: httpx.AsyncClient, github: SandboxGitHub) -> None:
    github.add_file("org/backend", "dir/one.txt", "1")
    github.add_file("org/backend", "dir/sub/two.txt", "2")
    headers = await token_for(http, github, "org/backend")

    response = await http.get("/repos/org/backend/contents/dir", headers=headers)

    assert [entry["path"] for entry in response.json()] == ["dir/one.txt"]


async def test_a_known_commit_is_found_and_an_unknown_one_is_422(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    sha = github.add_commit("org/backend", message="Fix the thing")
    headers = await token_for(http, github, "org/backend")

    found = await http.get(f"/repos/org/backend/commits/{sha}", headers=headers)
    short = await http.get(f"/repos/org/backend/commits/{sha[:7]}", headers=headers)
    unknown = await http.get(f"/repos/org/backend/commits/{'b' * 40}", headers=headers)
    as_sha = await http.get(
        f"/repos/org/backend/commits/{sha}",
        headers={**headers, "accept": "application/vnd.github.sha"},
    )

    assert found.status_code == 200 and found.json()["commit"]["message"] == "Fix the thing"
    assert short.json()["sha"] == sha
    assert unknown.status_code == 422
    assert unknown.json()["message"] == f"No commit found for SHA: {'b' * 40}"
    assert as_sha.text == sha


# --- check runs ---------------------------------------------------------------------------


async def test_check_runs_on_one_commit_share_a_suite_and_list_latest_per_name(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")
    created = []
    for name, status in [("crcr/a", "in_progress"), ("crcr/a", "completed"), ("crcr/b", "queued")]:
        body: dict[str, Any] = {"name": name, "head_sha": SHA, "status": status}
        if status == "completed":
            body["conclusion"] = "failure"
        response = await http.post("/repos/org/backend/check-runs", headers=headers, json=body)
        assert response.status_code == 201
        created.append(response.json())

    suite_id = created[0]["check_suite"]["id"]
    latest = await http.get(
        f"/repos/org/backend/check-suites/{suite_id}/check-runs", headers=headers
    )
    everything = await http.get(
        f"/repos/org/backend/check-suites/{suite_id}/check-runs?filter=all", headers=headers
    )
    by_commit = await http.get(f"/repos/org/backend/commits/{SHA}/check-runs", headers=headers)

    assert {run["check_suite"]["id"] for run in created} == {suite_id}
    assert latest.json()["total_count"] == 2
    assert {(r["name"], r["status"]) for r in latest.json()["check_runs"]} == {
        ("crcr/a", "completed"),
        ("crcr/b", "queued"),
    }
    assert everything.json()["total_count"] == 3
    assert by_commit.json()["total_count"] == 2


async def test_a_check_run_carries_the_fields_it_was_created_with(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")
    body = {
        "name": "crcr/org/backend/ci/test",
        "head_sha": SHA,
        "conclusion": "success",
        "external_id": "77:12",
        "details_url": "https://example.org/run/77",
        "output": {"title": "Success", "summary": "All good"},
    }

    run = (await http.post("/repos/org/backend/check-runs", headers=headers, json=body)).json()

    assert run["status"] == "completed" and run["conclusion"] == "success"
    assert run["external_id"] == "77:12"
    assert run["details_url"] == "https://example.org/run/77"
    assert run["output"]["title"] == "Success" and run["completed_at"]
    assert github.check_runs("org/backend") == [run]


@pytest.mark.parametrize(
    "body",
    [
        {"head_sha": SHA},
        {"name": "x", "head_sha": "not-a-sha"},
        {"name": "x", "head_sha": SHA, "status": "completed"},
        {"name": "x", "head_sha": SHA, "output": {"title": "no summary"}},
    ],
)
async def test_an_invalid_check_run_gets_422(
    http: httpx.AsyncClient, github: SandboxGitHub, body: dict[str, Any]
) -> None:
    headers = await token_for(http, github, "org/backend")

    response = await http.post("/repos/org/backend/check-runs", headers=headers, json=body)

    assert response.status_code == 422
    assert github.check_runs("org/backend") == []


async def test_an_unknown_suite_is_404(http: httpx.AsyncClient, github: SandboxGitHub) -> None:
    headers = await token_for(http, github, "org/backend")

    response = await http.get("/repos/org/backend/check-suites/999999/check-runs", headers=headers)

    assert response.status_code == 404


# --- re-runs ----------------------------------------------------------------------------------


async def test_a_finished_run_can_be_rerun_and_a_running_one_cannot(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    run_id = github.add_workflow_run("org/backend", status="completed", conclusion="failure")
    headers = await token_for(http, github, "org/backend")
    path = f"/repos/org/backend/actions/runs/{run_id}"

    first = await http.post(f"{path}/rerun-failed-jobs", headers=headers)
    again = await http.post(f"{path}/rerun", headers=headers)

    assert first.status_code == 201
    assert again.status_code == 403
    assert again.json()["message"] == "This workflow is already running"
    assert [(r.run_id, r.kind) for r in github.reruns("org/backend")] == [
        (run_id, "rerun-failed-jobs")
    ]


async def test_a_run_set_running_by_the_test_refuses_reruns(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    run_id = github.add_workflow_run("org/backend")
    github.set_run_status("org/backend", run_id, "in_progress")
    headers = await token_for(http, github, "org/backend")

    response = await http.post(f"/repos/org/backend/actions/runs/{run_id}/rerun", headers=headers)

    assert response.status_code == 403


async def test_an_unknown_run_is_404(http: httpx.AsyncClient, github: SandboxGitHub) -> None:
    headers = await token_for(http, github, "org/backend")

    response = await http.post("/repos/org/backend/actions/runs/5/rerun", headers=headers)

    assert response.status_code == 404


# --- comments -----------------------------------------------------------------------------------


async def test_comments_are_created_paginated_and_edited(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")
    for i in range(3):
        created = await http.post(
            "/repos/org/backend/issues/7/comments", headers=headers, json={"body": f"c{i}"}
        )
        assert created.status_code == 201
    first_id = github.comments("org/backend", 7)[0]["id"]

    page_one = await http.get("/repos/org/backend/issues/7/comments?per_page=2", headers=headers)
    page_two = await http.get(page_one.links["next"]["url"], headers=headers)
    edited = await http.patch(
        f"/repos/org/backend/issues/comments/{first_id}", headers=headers, json={"body": "new"}
    )
    missing = await http.patch(
        "/repos/org/backend/issues/comments/1", headers=headers, json={"body": "x"}
    )

    assert [c["body"] for c in page_one.json()] == ["c0", "c1"]
    assert [c["body"] for c in page_two.json()] == ["c2"]
    assert "next" not in page_two.links
    assert edited.status_code == 200 and edited.json()["body"] == "new"
    assert github.comments("org/backend", 7)[0]["user"]["login"] == "crcr-sandbox[bot]"
    assert missing.status_code == 404


# --- call log and faults ------------------------------------------------------------------------


async def test_the_call_log_records_method_path_repo_status_and_body(
    http: httpx.AsyncClient, github: SandboxGitHub, clock: Clock
) -> None:
    headers = await token_for(http, github, "org/backend")
    github.call_log.clear()

    await http.post("/repos/org/backend/dispatches", headers=headers, json={"event_type": "push"})
    await http.get("/repos/org/other")

    [dispatch] = github.calls("POST", "/repos/*/dispatches")
    assert dispatch.call == "POST /repos/org/backend/dispatches"
    assert (dispatch.repo, dispatch.status, dispatch.json) == (
        "org/backend",
        204,
        {"event_type": "push"},
    )
    assert dispatch.timestamp == clock.now
    assert "authorization" not in dispatch.headers
    assert [c.status for c in github.calls(repo="org/other")] == [401]
    assert github.call_log.count() == len(github.calls()) == 2


async def test_a_fault_answers_the_next_n_calls_then_normal_service_resumes(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")
    github.inject_fault("/repos/*/dispatches", status=502, times=3)

    statuses = [
        (
            await http.post(
                "/repos/org/backend/dispatches", headers=headers, json={"event_type": "x"}
            )
        ).status_code
        for _ in range(4)
    ]

    assert statuses == [502, 502, 502, 204]
    assert [c.faulted for c in github.calls(path="/repos/*/dispatches")] == [True] * 3 + [False]
    assert len(github.dispatches()) == 1


async def test_a_fault_can_target_one_repo_and_one_method_and_send_retry_after(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")
    github.inject_fault(repo="org/backend", method="GET", status=429, retry_after=7)

    throttled = await http.get("/repos/org/backend", headers=headers)
    other_repo = await http.get("/repos/org/other", headers=headers)
    other_method = await http.post(
        "/repos/org/backend/dispatches", headers=headers, json={"event_type": "x"}
    )

    assert throttled.status_code == 429 and throttled.headers["retry-after"] == "7"
    assert other_repo.status_code == 200
    assert other_method.status_code == 204


async def test_latency_delays_the_answer(http: httpx.AsyncClient, github: SandboxGitHub) -> None:
    github.inject_fault("/repos/*/installation", latency=0.2)
    started = time.monotonic()

    response = await http.get("/repos/org/backend/installation", headers=as_app(github))

    assert response.status_code == 200
    assert time.monotonic() - started >= 0.2


async def test_a_slow_call_is_handled_at_once_and_answered_after_its_latency(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    # GitHub works on a call within its latency, serving calls in parallel; the sandbox,
    # one event loop, would queue each call's work behind the others' waits otherwise.
    headers = await token_for(http, github, "org/backend")
    github.inject_fault("/repos/*/dispatches", latency=30)

    sending = asyncio.create_task(
        http.post("/repos/org/backend/dispatches", headers=headers, json={"event_type": "x"})
    )
    await github.wait_for(lambda: len(github.dispatches("org/backend")) == 1)

    assert not sending.done()
    assert github.calls(path="/repos/org/backend/dispatches") == []  # logged once answered
    sending.cancel()


async def test_a_hang_outlasts_the_client_and_is_logged_without_a_status(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    github.inject_fault("/repos/org/backend", hang=30, times=1)
    headers = await token_for(http, github, "org/backend")

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await http.get("/repos/org/backend", headers=headers)

    [hung] = github.calls(path="/repos/org/backend")
    assert hung.status is None and hung.faulted


async def test_wait_for_returns_once_the_condition_holds(
    http: httpx.AsyncClient, github: SandboxGitHub
) -> None:
    headers = await token_for(http, github, "org/backend")

    async def dispatch_later() -> None:
        await asyncio.sleep(0.02)
        await http.post("/repos/org/backend/dispatches", headers=headers, json={"event_type": "x"})

    task = asyncio.create_task(dispatch_later())
    await github.wait_for(lambda: len(github.dispatches()) == 1, within=2)
    await task

    with pytest.raises(TimeoutError):
        await github.wait_for(lambda: len(github.dispatches()) == 2, within=0.05)


# --- composition ----------------------------------------------------------------------------------


async def test_the_api_can_live_under_an_enterprise_prefix_beside_extra_routes(
    github: SandboxGitHub,
) -> None:
    async def hello(request: Any) -> PlainTextResponse:
        return PlainTextResponse("issuer here")

    app = create_sandbox_app(
        github, extra_routes=[Route("/oidc/hello", hello)], api_prefix="/api/v3"
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        prefixed = await client.get(
            "/api/v3/repos/org/backend/installation", headers=as_app(github)
        )
        unprefixed = await client.get("/repos/org/backend/installation", headers=as_app(github))
        extra = await client.get("/oidc/hello")

    assert prefixed.status_code == 200
    assert prefixed.json()["access_tokens_url"].startswith(f"{BASE}/api/v3/app/installations/")
    assert unprefixed.status_code == 404
    assert extra.text == "issuer here"
    assert [c.path for c in github.calls()] == ["/repos/org/backend/installation"]
