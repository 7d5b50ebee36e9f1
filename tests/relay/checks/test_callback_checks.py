"""Callback steps 3-6: rate limit, schema and size, self-reports, binding to the dispatch.

Each refusal is checked for its status code, a message naming the field, and that
nothing was written (no HUD row, no job record).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import L2_REPO, L4_REPO, Relay, callback_body

from crcr.relay.jobs.dispatch import DispatchStatus
from crcr.relay.jobs.lifecycle import job_store_key

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)

NIGHTLY_SHA = "0123456789abcdef0123456789abcdef01234567"


async def assert_nothing_written(relay: Relay, delivery_id: str = "d-1") -> None:
    assert relay.hud.writes == 0
    key = job_store_key(delivery_id, L2_REPO, "9001", "1", "test")
    assert await relay.store.get_job(key) is None


def limit(relay: Relay, per_minute: int, window: float = 60.0) -> None:
    relay.deps.settings = relay.settings.model_copy(update={"rate_limit_per_min": per_minute})
    relay.deps.rate_window = window


# --- step 3: rate limit ------------------------------------------------------------


async def test_the_limit_admits_exactly_n_then_answers_429_with_retry_after(
    relay: Relay,
) -> None:
    limit(relay, 3)
    await relay.dispatch("d-1")
    token = relay.token()

    answers = [await relay.post(callback_body("d-1"), token=token) for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert 1 <= int(answers[-1].headers["retry-after"]) <= 60
    other_repo = await relay.post(callback_body("d-9"), repo=L4_REPO)
    assert other_repo.status_code != 429


async def test_refused_requests_do_not_extend_the_lockout(relay: Relay) -> None:
    window = 2.0  # the two accepted posts must land inside it, on a loaded machine too
    limit(relay, 2, window)
    await relay.dispatch("d-1")
    token = relay.token()
    first = time.monotonic()
    for _ in range(2):
        assert (await relay.post(callback_body("d-1"), token=token)).status_code == 200

    # Keep knocking while locked out; if refusals counted, the door would never open.
    refused = 0
    while True:
        response = await relay.post(callback_body("d-1"), token=token)
        if response.status_code != 429:
            break
        refused += 1
        assert time.monotonic() - first < window + 2.0, "lockout outlived the window"
        await asyncio.sleep(0.02)

    assert refused > 0
    assert response.status_code == 200


async def test_over_the_limit_the_answer_is_429_whatever_the_body(relay: Relay) -> None:
    limit(relay, 1)
    await relay.dispatch("d-1")
    token = relay.token()
    assert (await relay.post(callback_body("d-1"), token=token)).status_code == 200

    invalid = await relay.post(b"{not json", token=token)
    undispatched = await relay.post(callback_body("d-unknown"), token=token)

    assert (invalid.status_code, undispatched.status_code) == (429, 429)


# --- step 4: schema and size -------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("delivery_id",), None, "delivery_id: required"),
        (("workflow", "status"), None, "workflow.status: required"),
        (("workflow", "status"), "queued", "workflow.status: must be one of"),
        (("workflow", "name"), None, "workflow.name: required"),
        (("workflow", "run_id"), None, "workflow.run_id: required"),
        (("workflow", "run_id"), {"id": 1}, "workflow.run_id: must be a string or an integer"),
        (("workflow", "run_attempt"), True, "workflow.run_attempt: must be a string or an integer"),
        (("workflow",), "done", "workflow: must be an object"),
    ],
)
async def test_a_malformed_body_is_refused_naming_the_field(
    relay: Relay, path: tuple[str, ...], value: Any, message: str
) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    if value is None:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value

    response = await relay.post(body)

    assert response.status_code == 400
    assert response.json()["detail"].startswith(message)
    await assert_nothing_written(relay)


async def test_not_json_is_refused(relay: Relay) -> None:
    response = await relay.post(b"{not json")

    assert (response.status_code, response.json()) == (
        400,
        {"detail": "body: not valid JSON", "field": "body"},
    )


@pytest.mark.parametrize("run_id", [9001, "0190f1c2-7d4e-7a55-b1f0-3f2b9e7d1c00"])
async def test_run_ids_may_be_integers_or_buildkite_uuids(relay: Relay, run_id: Any) -> None:
    await relay.dispatch("d-1")

    response = await relay.post(callback_body("d-1", run_id=run_id))

    assert response.status_code == 200


async def test_a_body_over_1_mib_by_content_length_is_refused_with_413(relay: Relay) -> None:
    body = callback_body("d-1")
    body["workflow"]["padding"] = "x" * (1024 * 1024)

    response = await relay.post(body)

    assert response.status_code == 413
    await assert_nothing_written(relay)


async def test_a_chunked_body_over_1_mib_is_refused_with_413(relay: Relay) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b" " * 65536  # whitespace: valid JSON padding, 1.25 MiB in all

    response = await relay.client.post(
        "/github/callback",
        content=chunks(),
        headers={"authorization": f"Bearer {relay.token()}"},
    )

    assert "content-length" not in response.request.headers
    assert response.status_code == 413


# --- step 5: nightly / periodic self-reports -----------------------------------------


def nightly(status: str = "completed", conclusion: str | None = "success", **kw: Any) -> Any:
    body = callback_body(NIGHTLY_SHA, status, conclusion, event_type="nightly", **kw)
    return body


async def test_a_nightly_report_needs_no_dispatch_and_is_verified_upstream(
    relay: Relay,
) -> None:
    asked: list[tuple[str, str]] = []

    async def commit_exists(repo: str, sha: str) -> bool:
        asked.append((repo, sha))
        return True

    relay.deps.commit_exists = commit_exists

    first = await relay.post(nightly())
    second = await relay.post(nightly(run_id="9002", job_name="other"))

    assert first.json() == {"status": "accepted"}
    assert second.json() == {"status": "accepted"}
    assert asked == [("pytorch/pytorch", NIGHTLY_SHA)]  # cached after the first look-up
    assert [body["trusted"]["sha_verified"] for body in relay.hud.received] == [True, True]
    rows = list(relay.hud.rows.values())
    assert [row["head_sha"] for row in rows] == [NIGHTLY_SHA, NIGHTLY_SHA]


async def test_a_nightly_report_for_an_unknown_commit_is_refused(relay: Relay) -> None:
    async def commit_exists(repo: str, sha: str) -> bool:
        return False

    relay.deps.commit_exists = commit_exists

    response = await relay.post(nightly())

    assert response.status_code == 400
    assert response.json()["detail"].startswith("delivery_id: commit")
    assert relay.hud.writes == 0


async def test_a_nightly_report_is_kept_unverified_when_github_cannot_be_asked(
    relay: Relay,
) -> None:
    async def commit_exists(repo: str, sha: str) -> bool:
        raise ConnectionError("GitHub is down")

    relay.deps.commit_exists = commit_exists

    response = await relay.post(nightly())

    assert response.status_code == 200
    assert relay.hud.only_row()["head_sha"] == NIGHTLY_SHA
    assert relay.hud.received[-1]["trusted"]["sha_verified"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (nightly("in_progress", None), "workflow.status"),
        ({**nightly(), "delivery_id": "not-a-sha"}, "delivery_id"),
        ({**nightly(), "delivery_id": "abc12"}, "delivery_id"),
    ],
)
async def test_a_malformed_self_report_is_refused(relay: Relay, body: Any, field: str) -> None:
    response = await relay.post(body)

    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{field}:")
    assert relay.hud.writes == 0


# --- step 6: binding to the dispatch -------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"head_sha": "b" * 40}, "payload.pull_request.head.sha"),
        ({"pr_number": 999}, "payload.pull_request.number"),
        ({"event_type": "push"}, "event_type"),
    ],
)
async def test_an_echo_that_differs_from_the_dispatch_is_refused(
    relay: Relay, overrides: dict[str, Any], field: str
) -> None:
    await relay.dispatch("d-1")

    response = await relay.post(callback_body("d-1", **overrides))

    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{field}:")
    await assert_nothing_written(relay)


async def test_a_push_callback_is_bound_by_the_pushed_sha(relay: Relay) -> None:
    await relay.dispatch("d-1", event_type="push", head_sha="c" * 40, pr_number=None)

    wrong = await relay.post(callback_body("d-1", event_type="push", head_sha="d" * 40))
    right = await relay.post(callback_body("d-1", event_type="push", head_sha="c" * 40))

    assert wrong.status_code == 400
    assert wrong.json()["detail"].startswith("payload.after:")
    assert right.status_code == 200
    assert relay.hud.only_row()["head_sha"] == "c" * 40


async def test_without_a_dispatch_record_nothing_is_accepted(relay: Relay) -> None:
    response = await relay.post(callback_body("d-unknown"))

    assert response.status_code == 400
    assert response.json()["detail"].startswith("delivery_id:")
    await assert_nothing_written(relay, "d-unknown")


async def test_a_failed_dispatch_accepts_no_callbacks_but_a_pending_one_does(
    relay: Relay,
) -> None:
    await relay.dispatch("d-failed", status=DispatchStatus.FAILED)
    await relay.dispatch("d-pending", status=DispatchStatus.PENDING)

    failed = await relay.post(callback_body("d-failed"))
    pending = await relay.post(callback_body("d-pending"))

    assert failed.status_code == 400
    assert "failed" in failed.json()["detail"]
    assert pending.status_code == 200


async def test_hud_attribution_uses_the_record_not_the_echo(relay: Relay) -> None:
    # The echo may carry extra fields, but head SHA and PR number come from the record.
    await relay.dispatch("d-1", head_sha="E" * 40)

    response = await relay.post(callback_body("d-1", head_sha="e" * 40))

    assert response.status_code == 200
    assert relay.hud.only_row()["head_sha"] == "E" * 40
