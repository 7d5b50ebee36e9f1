"""Callback steps 1-2: who is calling (the token) and whether their results count (level).

Every rejected token is answered 401 before anything is read or written; a valid token
for a repo below L2 is answered 200 "ignored".
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount
from tests.asgi_cut import post_then_vanish
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import AUDIENCE, L1_REPO, L2_REPO, Relay, callback_body

from crcr.config.settings import OidcIssuer
from crcr.relay.callback.deps import CallbackDeps
from crcr.relay.callback.endpoint import callback_router
from crcr.sandbox.oidc_issuer import SandboxIssuer, SigningKey

opener, signing_key, issuer = harness.opener, harness.signing_key, harness.issuer

BUILDKITE_URL = "http://sandbox.test/buildkite"
ORG_ID = "0190a1b2-7c1e-7d3a-9f00-3a1d2e4f5a60"
PIPELINE_ID = "0190a1b2-7c1e-7d3a-9f00-5b6c7d8e9f01"
UNMAPPED_PIPELINE_ID = "7f000000-0000-4000-8000-000000000002"
BUILDKITE_ISSUER = OidcIssuer.model_validate(
    {
        "issuer": BUILDKITE_URL,
        "kind": "buildkite",
        "repo_map": {
            f"{ORG_ID}/{PIPELINE_ID}": {
                "repo": L2_REPO,
                "required_claims": {"build_branch": "main"},
            }
        },
    }
)


@pytest.fixture(scope="module")
def buildkite() -> SandboxIssuer:
    return SandboxIssuer(BUILDKITE_URL, key=SigningKey.generate())


@pytest.fixture
async def relay(
    opener: harness.StoreOpener,
    issuer: SandboxIssuer,
    buildkite: SandboxIssuer,
    tmp_path: Path,
) -> AsyncIterator[Relay]:
    """The harness's relay, also trusting a Buildkite issuer whose pipeline is the L2 repo."""
    hud = harness.StandInHud(tmp_path / "hud.db")
    store = await opener.open()
    world = Starlette(
        routes=[
            Mount("/oidc", routes=issuer.routes()),
            Mount("/buildkite", routes=buildkite.routes()),
            Mount("/", app=hud.app),
        ]
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=world)) as http:
        built = await harness.build_relay(
            store, hud, issuer, harness.Clock(), http, extra_issuers=[BUILDKITE_ISSUER]
        )
        async with built.client:
            yield built
    await store.close()
    await hud.close()


def _claims(issuer: SandboxIssuer, **overrides: Any) -> dict[str, Any]:
    return issuer.actions_claims(L2_REPO, audience=AUDIENCE, **overrides)


def _buildkite(issuer: SandboxIssuer, **overrides: Any) -> str:
    claims = {
        "organization_slug": "org2",
        "pipeline_slug": "l2-backend",
        "organization_id": ORG_ID,
        "pipeline_id": PIPELINE_ID,
        "audience": AUDIENCE,
        **overrides,
    }
    return issuer.mint_buildkite_token(**claims)


# Each forgery gets the GitHub issuer and the Buildkite one, and signs with either.
FORGERIES: dict[str, Callable[[SandboxIssuer, SandboxIssuer], str]] = {
    "not a JWT": lambda i, _: "not-a-jwt",
    "wrong audience": lambda i, _: i.mint(_claims(i, aud="https://github.com/org2")),
    "wrong issuer": lambda i, _: i.mint(_claims(i, iss="https://evil.example/oidc")),
    "expired": lambda i, _: i.mint(_claims(i, exp=int(time.time()) - 3600)),
    "not valid yet": lambda i, _: i.mint(_claims(i, nbf=int(time.time()) + 3600)),
    "alg none": lambda i, _: i.mint(_claims(i), alg="none"),
    "HS256 keyed with the public key": lambda i, _: i.mint(_claims(i), alg="HS256"),
    "unknown kid": lambda i, _: i.mint(_claims(i), headers={"kid": "never-published"}),
    "signed by another key": lambda i, _: i.mint(
        _claims(i), key=SigningKey.generate(), headers={"kid": i.signing_key.kid}
    ),
    "Buildkite pipeline not mapped": lambda _, bk: _buildkite(bk, pipeline_id=UNMAPPED_PIPELINE_ID),
    "Buildkite required claim not met": lambda _, bk: _buildkite(bk, build_branch="feature/x"),
    # Slugs are anyone's to choose: spelling the mapped IDs in them must not do.
    "Buildkite slugs without the ID claims": lambda _, bk: _buildkite(
        bk,
        organization_slug=ORG_ID,
        pipeline_slug=PIPELINE_ID,
        organization_id=None,
        pipeline_id=None,
    ),
}
BUILDKITE_REASONS = {
    "Buildkite pipeline not mapped": "Buildkite pipeline is not mapped to a repository",
    "Buildkite required claim not met": "build_branch does not meet the pipeline's requirement",
    "Buildkite slugs without the ID claims": "lacks the Buildkite organization_id and pipeline_id",
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
async def test_a_bad_token_is_refused_with_401_and_nothing_is_written(
    relay: Relay, buildkite: SandboxIssuer, forgery: str
) -> None:
    await relay.dispatch("d-1")
    token = FORGERIES[forgery](relay.issuer, buildkite)

    response = await relay.post(callback_body("d-1"), token=token)

    assert response.status_code == 401, response.text
    assert BUILDKITE_REASONS.get(forgery, "") in response.json()["detail"]
    assert relay.hud.writes == 0
    assert await relay.store.overdue(time.time() + 10**9) == []


async def test_a_missing_authorization_header_is_refused_with_401(relay: Relay) -> None:
    response = await relay.client.post("/github/callback", json=callback_body("d-1"))

    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "Authorization" in response.json()["detail"]


async def test_the_refusal_never_echoes_the_token(relay: Relay) -> None:
    token = relay.issuer.mint(_claims(relay.issuer, aud="elsewhere"))

    response = await relay.post(callback_body("d-1"), token=token)

    assert response.status_code == 401
    assert token not in response.text
    assert token.split(".")[1] not in response.text


@pytest.mark.parametrize("repo", [L1_REPO, "stranger/not-listed"])
async def test_a_repo_below_l2_is_ignored_without_writing(relay: Relay, repo: str) -> None:
    await relay.dispatch("d-1", repo)

    response = await relay.post(callback_body("d-1"), repo=repo)

    assert response.status_code == 200
    assert response.json() == {"status": "ignored"}
    assert relay.hud.writes == 0


async def test_the_repo_comes_from_the_token_not_the_body(relay: Relay) -> None:
    # The body claims nothing about the repo; the dispatch exists only for the L2 repo,
    # so an L4 token cannot report on it.
    await relay.dispatch("d-1", L2_REPO)

    response = await relay.post(callback_body("d-1"), repo="org4/critical")

    assert response.status_code == 400
    assert "delivery_id" in response.json()["detail"]
    assert relay.hud.writes == 0


async def test_a_valid_token_for_an_l2_repo_is_accepted_with_and_without_the_slash(
    relay: Relay,
) -> None:
    await relay.dispatch("d-1")
    await relay.dispatch("d-2")

    plain = await relay.post(callback_body("d-1"))
    slashed = await relay.post(callback_body("d-2"), path="/github/callback/")

    assert (plain.status_code, plain.json()) == (200, {"status": "accepted"})
    assert (slashed.status_code, slashed.json()) == (200, {"status": "accepted"})
    assert relay.hud.writes == 2


async def test_the_router_can_take_its_dependencies_late(relay: Relay) -> None:
    app = FastAPI()
    late: dict[str, CallbackDeps] = {}
    app.include_router(callback_router(lambda: late["deps"]))
    late["deps"] = relay.deps  # as an app's lifespan would, after the routes exist
    await relay.dispatch("d-1")

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://relay"
    ) as client:
        response = await client.post(
            "/github/callback",
            json=callback_body("d-1"),
            headers={"authorization": f"Bearer {relay.token()}"},
        )

    assert response.json() == {"status": "accepted"}


async def test_a_mapped_buildkite_pipeline_reports_for_its_repo(
    relay: Relay, buildkite: SandboxIssuer
) -> None:
    await relay.dispatch("d-1")

    response = await relay.post(callback_body("d-1"), token=_buildkite(buildkite))

    assert (response.status_code, response.json()) == (200, {"status": "accepted"})
    assert relay.hud.writes == 1


async def test_a_reporter_gone_mid_body_is_logged_at_info_and_writes_nothing(
    relay: Relay, caplog: pytest.LogCaptureFixture
) -> None:
    await relay.dispatch("d-cut")
    body = json.dumps(callback_body("d-cut")).encode()
    app = FastAPI()
    app.include_router(callback_router(relay.deps))
    headers = {"authorization": f"Bearer {relay.token()}"}

    with caplog.at_level(logging.INFO):
        await post_then_vanish(app, "/github/callback", headers, body[:200], len(body))

    assert relay.hud.writes == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    cut = [r for r in caplog.records if "went away" in r.getMessage()]
    assert [(r.levelno, r.__dict__.get("delivery_id")) for r in cut] == [(logging.INFO, "d-cut")]
    retried = await relay.post(body)
    assert retried.json()["status"] == "accepted"
    assert relay.hud.writes == 1


@pytest.mark.parametrize("field", ["run_id", "run_attempt", "job_name", "name", "check_run_id"])
async def test_a_lone_surrogate_in_an_identifier_is_a_400_naming_the_field(
    relay: Relay, buildkite: SandboxIssuer, field: str
) -> None:
    # Issue 33 item 15: a Buildkite token is not bound to a run, so its run id is the
    # body's; a lone surrogate in it failed to encode into the job key (a 500).
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    body["workflow"][field] = "12\ud800"

    response = await relay.post(json.dumps(body).encode(), token=_buildkite(buildkite))

    assert response.status_code == 400, response.text
    assert response.json()["detail"] == f"workflow.{field}: must not contain lone surrogates"
    assert relay.hud.writes == 0
    accepted = await relay.post(callback_body("d-1"), token=_buildkite(buildkite))
    assert accepted.json() == {"status": "accepted"}
