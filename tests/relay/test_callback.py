"""Callback steps 1-2: who is calling (the token) and whether their results count (level).

Every rejected token is answered 401 before anything is read or written; a valid token
for a repo below L2 is answered 200 "ignored".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import AUDIENCE, L1_REPO, L2_REPO, Relay, callback_body

from crcr.relay.callback import callback_router
from crcr.relay.callback_deps import CallbackDeps
from crcr.sandbox.oidc_issuer import SandboxIssuer, SigningKey

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


def _claims(issuer: SandboxIssuer, **overrides: Any) -> dict[str, Any]:
    return issuer.actions_claims(L2_REPO, audience=AUDIENCE, **overrides)


FORGERIES: dict[str, Callable[[SandboxIssuer], str]] = {
    "not a JWT": lambda i: "not-a-jwt",
    "wrong audience": lambda i: i.mint(_claims(i, aud="https://github.com/org2")),
    "wrong issuer": lambda i: i.mint(_claims(i, iss="https://evil.example/oidc")),
    "expired": lambda i: i.mint(_claims(i, exp=int(time.time()) - 3600)),
    "not valid yet": lambda i: i.mint(_claims(i, nbf=int(time.time()) + 3600)),
    "alg none": lambda i: i.mint(_claims(i), alg="none"),
    "HS256 keyed with the public key": lambda i: i.mint(_claims(i), alg="HS256"),
    "unknown kid": lambda i: i.mint(_claims(i), headers={"kid": "never-published"}),
    "signed by another key": lambda i: i.mint(
        _claims(i), key=SigningKey.generate(), headers={"kid": i.signing_key.kid}
    ),
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
async def test_a_bad_token_is_refused_with_401_and_nothing_is_written(
    relay: Relay, forgery: str
) -> None:
    await relay.dispatch("d-1")
    token = FORGERIES[forgery](relay.issuer)

    response = await relay.post(callback_body("d-1"), token=token)

    assert response.status_code == 401, response.text
    assert response.json()["error"]
    assert relay.hud.writes == 0
    assert await relay.store.overdue(time.time() + 10**9) == []


async def test_a_missing_authorization_header_is_refused_with_401(relay: Relay) -> None:
    response = await relay.client.post("/github/callback", json=callback_body("d-1"))

    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "Authorization" in response.json()["error"]


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
    assert "delivery_id" in response.json()["error"]
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
