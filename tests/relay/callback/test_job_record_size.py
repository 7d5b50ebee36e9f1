"""What one callback may cost the state store: unknown keys dropped, strings capped.

A job record lives for days (CRCR_STATUS_TTL); a downstream must not be able to choose
its size. `MAX_JOB_RECORD_BYTES` states the bound, and a callback with every field at
its cap, on a dispatch with as many labels as GitHub allows, stays inside it.
"""

from __future__ import annotations

import orjson
import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import (
    HEAD_SHA,
    L2_REPO,
    PR_NUMBER,
    UPSTREAM,
    Relay,
    callback_body,
)

from crcr.relay.jobs.dispatch import DispatchRecord, DispatchStatus, UpstreamContext
from crcr.relay.jobs.job import MAX_JOB_RECORD_BYTES
from crcr.relay.jobs.lifecycle import job_store_key

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)

GITHUB_MAX_LABELS, GITHUB_MAX_LABEL_CHARS = 100, 50
LONGEST_TIME = "2026-01-01T00:00:00.123456+05:30:00.1234"  # ISO-8601, at the 40-character cap
VERDICT = {
    "schema_version": 1,
    "category": "backend",
    "confidence": "high",
    "summary": "s" * 1000,
    "evidence": [
        {"job": "j" * 200, "test": "t" * 200, "excerpt": "e" * 1000, "log_url": "https://x.org/"}
    ]
    * 10,
}


async def stored_size(relay: Relay, delivery: str, body: dict[str, object]) -> int:
    workflow = body["workflow"]
    assert isinstance(workflow, dict)
    key = job_store_key(delivery, L2_REPO, str(workflow["run_id"]), "1", str(workflow["job_name"]))
    job = await relay.store.get_job(key)
    assert job is not None
    return len(orjson.dumps(job.data))


async def test_unknown_keys_are_not_stored(relay: Relay) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    filler = "x" * 300_000
    body["padding"] = filler
    body["workflow"]["padding"] = filler
    body["workflow"]["test_results"] = {"passed": 1, "padding": filler}

    response = await relay.post(body)

    assert response.json() == {"status": "accepted"}
    size = await stored_size(relay, "d-1", body)
    assert size < 4 * 1024
    assert "padding" not in str(
        await relay.store.get_job(job_store_key("d-1", L2_REPO, "9001", "1", "test"))
    )


@pytest.mark.parametrize(
    ("field", "length"),
    [("name", 301), ("job_name", 301), ("run_id", 41), ("conclusion", 41), ("started_at", 41)],
)
async def test_an_overlong_string_is_refused_naming_the_field(
    relay: Relay, field: str, length: int
) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    body["workflow"][field] = "7" * length

    response = await relay.post(body)

    assert response.status_code == 400
    assert response.json()["detail"] == f"workflow.{field}: must be at most {length - 1} characters"
    assert relay.hud.writes == 0


async def test_a_callback_at_every_cap_stays_inside_the_stated_bound(relay: Relay) -> None:
    labels = tuple(f"{n:03d}".ljust(GITHUB_MAX_LABEL_CHARS, "l") for n in range(GITHUB_MAX_LABELS))
    delivery = "d" * 200
    record = DispatchRecord(
        delivery_id=delivery,
        repo=L2_REPO,
        status=DispatchStatus.DISPATCHED,
        context=UpstreamContext(UPSTREAM, "pull_request", HEAD_SHA, PR_NUMBER, labels),
        sent_at=relay.clock(),
    )
    await relay.store.put_dispatch(delivery, L2_REPO, record.to_store(), 3600)
    body = callback_body(delivery, run_id="9" * 40, job_name="j" * 300)
    body["workflow"].update(
        triage_verdict=VERDICT,
        name="n" * 300,
        url=f"https://github.com/{L2_REPO}/actions/runs/{'9' * 40}/job/" + "9" * 20,
        schema_version="1" * 40,
        check_run_id="c" * 40,
        started_at=LONGEST_TIME,
        artifact_url="https://example.org/" + "a" * 1980,
        test_results={
            "passed": 10**9,
            "failed": 10**9,
            "skipped": 10**9,
            "failed_tests": [{"name": "n" * 300, "file": "f" * 300, "message": "m" * 2000}] * 150,
        },
    )

    # Down, the HUD stores nothing, and the relay keeps the job as it would.
    relay.hud.down = True
    started = await relay.post(body)
    body["workflow"].update(status="completed", conclusion="c" * 30, completed_at=LONGEST_TIME)
    finished = await relay.post(body)

    assert (started.status_code, finished.status_code) == (202, 202), finished.text
    assert await stored_size(relay, delivery, body) <= MAX_JOB_RECORD_BYTES
