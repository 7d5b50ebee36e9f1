"""Every callback decision is logged and kept per downstream repo (SPEC §12, audit trail)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import L1_REPO, L2_REPO, Relay, callback_body

from crcr.config.logging_setup import ACCESS_LOGGER
from crcr.relay.audit.entries import IGNORED_REASON, NOT_ALLOWLISTED, UNAUTHENTICATED
from crcr.relay.audit.trail import AuditTrail
from crcr.relay.callback.endpoint import callback_router
from crcr.sandbox.oidc_issuer import SandboxIssuer, SigningKey
from crcr.web.access_log import AccessLog

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


@pytest.fixture
async def audited(relay: Relay) -> AsyncIterator[Relay]:
    """The relay, recording its decisions in an audit trail on its own store."""
    relay.deps.audit = AuditTrail(relay.store, keep_days=30, keep_per_repo=100)
    yield relay
    await relay.deps.audit.aclose()


async def trail_of(relay: Relay, bucket: str) -> list[dict[str, object]]:
    assert relay.deps.audit is not None
    await relay.deps.audit.flush()
    return await relay.store.audit_entries(bucket)


async def test_accepted_and_duplicate_callbacks_are_kept_with_who_and_what(
    audited: Relay, caplog: pytest.LogCaptureFixture
) -> None:
    await audited.dispatch("d-accept")
    body = callback_body("d-accept")
    caplog.set_level(logging.INFO, logger="crcr.relay.audit")

    assert (await audited.post(body)).status_code == 200
    assert (await audited.post(body)).json() == {"status": "duplicate"}

    duplicate, accepted = await trail_of(audited, L2_REPO)
    assert accepted["decision"] == "accepted" and duplicate["decision"] == "duplicate"
    assert accepted["kind"] == "callback" and accepted["verified"] is True
    assert accepted["repo"] == L2_REPO and accepted["delivery_id"] == "d-accept"
    assert "d-accept" in str(accepted["job_key"]) and "9001" in str(accepted["job_key"])
    assert str(accepted["subject"]).startswith(f"repo:{L2_REPO}:")
    assert accepted["issuer"] == harness.ISSUER_URL
    assert accepted["status"] == 200 and accepted["reported"] == "in_progress"
    assert float(str(accepted["at"])) <= float(str(duplicate["at"]))
    lines = [r for r in caplog.records if r.name == "crcr.relay.audit.trail"]
    assert [(r.levelname, r.getMessage()) for r in lines] == [
        ("INFO", "callback accepted"),
        ("INFO", "callback duplicate"),
    ]
    assert lines[0].__dict__["delivery_id"] == "d-accept"
    assert lines[0].__dict__["job_key"] == accepted["job_key"]


async def test_a_repo_below_l2_is_kept_as_refused_with_the_spec_status(
    audited: Relay, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="crcr.relay.audit")

    answer = await audited.post(callback_body("d-l1"), repo=L1_REPO)

    assert answer.json() == {"status": "ignored"}
    (entry,) = await trail_of(audited, L1_REPO)
    assert entry["decision"] == "refused" and entry["status"] == 200
    assert entry["reason"] == IGNORED_REASON
    (line,) = [r for r in caplog.records if r.name == "crcr.relay.audit.trail"]
    assert line.levelname == "WARNING" and line.__dict__["reason"] == IGNORED_REASON


async def test_with_the_access_log_on_a_decision_rides_on_its_request_line(
    audited: Relay, caplog: pytest.LogCaptureFixture
) -> None:
    app = FastAPI()
    app.include_router(callback_router(audited.deps))
    transport = httpx.ASGITransport(app=AccessLog(app))
    await audited.dispatch("d-carried")
    caplog.set_level(logging.INFO, logger="crcr")

    async with httpx.AsyncClient(transport=transport, base_url="http://relay") as client:
        audited.client = client
        assert (await audited.post(callback_body("d-carried"))).status_code == 200
        assert (await audited.post(callback_body("d-never-dispatched"))).status_code == 400

    assert not [r for r in caplog.records if r.name == "crcr.relay.audit.trail"]
    accepted, refused = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert accepted.levelname == "INFO" and refused.levelname == "WARNING"
    assert accepted.getMessage().endswith(" ms callback accepted")
    assert refused.getMessage().endswith(" ms callback refused")
    assert accepted.__dict__["delivery_id"] == "d-carried"
    assert accepted.__dict__["decision"] == "accepted"
    assert refused.__dict__["status"] == 400 and "dispatch" in refused.__dict__["reason"]
    assert isinstance(refused.__dict__["duration_ms"], float)


async def test_a_refusal_keeps_its_status_and_reason(audited: Relay) -> None:
    answer = await audited.post(callback_body("d-never-dispatched"))

    assert answer.status_code == 400
    (entry,) = await trail_of(audited, L2_REPO)
    assert entry["decision"] == "refused" and entry["status"] == 400
    assert entry["delivery_id"] == "d-never-dispatched"
    assert "dispatch" in str(entry["reason"])


async def test_a_garbage_token_is_kept_unauthenticated_and_never_stored(audited: Relay) -> None:
    garbage = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLWNvbnRlbnQ.AAAA-very-secret-signature"

    answer = await audited.post(callback_body("d-garbage"), token=garbage)

    assert answer.status_code == 401
    (entry,) = await trail_of(audited, UNAUTHENTICATED)
    assert entry["decision"] == "refused" and entry["status"] == 401
    assert entry["verified"] is False and entry["claimed_repo"] is None
    stored = json.dumps(await audited.store.audit_entries())
    for secret_part in garbage.split("."):
        assert secret_part not in stored
    assert await audited.store.audit_entries(L2_REPO) == []


async def test_a_forged_token_names_its_claimed_repo_but_stays_out_of_its_trail(
    audited: Relay,
) -> None:
    forger = SandboxIssuer(harness.ISSUER_URL, key=SigningKey.generate())
    forged = forger.mint_actions_token(L2_REPO, audience=harness.AUDIENCE, run_id="9001")

    assert (await audited.post(callback_body("d-forged"), token=forged)).status_code == 401

    (entry,) = await trail_of(audited, UNAUTHENTICATED)
    assert entry["claimed_repo"] == L2_REPO and entry["issuer"] == harness.ISSUER_URL
    assert entry["subject"] is None  # nothing unverified is passed off as the subject
    assert forged not in json.dumps(entry)
    assert await audited.store.audit_entries(L2_REPO) == []


async def test_repos_not_on_the_allowlist_share_one_bucket(audited: Relay) -> None:
    # Issue 33 item 18: each verified stranger had a bucket of its own, so the per-repo
    # cap did not bound the trail; now the buckets are the allowlist's repos plus two.
    strangers = [f"stranger/repo-{n}" for n in range(3)]

    for repo in strangers:
        assert (await audited.post(callback_body("d-s"), repo=repo)).json()["status"] == "ignored"

    kept = await trail_of(audited, NOT_ALLOWLISTED)
    assert sorted(str(e["repo"]) for e in kept) == strangers
    assert {e["verified"] for e in kept} == {True}
    for repo in strangers:
        assert await audited.store.audit_entries(repo) == []
