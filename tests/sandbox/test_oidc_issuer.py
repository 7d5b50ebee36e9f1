"""The sandbox OIDC issuer behaves like GitHub Actions' token service."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator

import httpx
import jwt
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from crcr.sandbox.oidc_issuer import SandboxIssuer

ISSUER_URL = "http://sandbox.test/oidc"
AUDIENCE = "pytorch-cross-repo-ci-relay"


@pytest.fixture(scope="module")
def issuer() -> SandboxIssuer:
    return SandboxIssuer(ISSUER_URL)


@pytest.fixture
async def client(issuer: SandboxIssuer) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(routes=[Mount("/oidc", routes=issuer.routes())])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sandbox.test") as http:
        yield http


def _segments(token: str) -> tuple[dict[str, object], dict[str, object], str]:
    header, payload, signature = token.split(".")
    pad = lambda part: base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))  # noqa: E731
    return json.loads(pad(header)), json.loads(pad(payload)), signature


def _verify_with_jwks(issuer: SandboxIssuer, token: str) -> dict[str, object]:
    kid = jwt.get_unverified_header(token)["kid"]
    (jwk,) = [key for key in issuer.jwks()["keys"] if key["kid"] == kid]
    return jwt.decode(
        token, jwt.PyJWK(jwk).key, algorithms=["RS256"], audience=AUDIENCE, issuer=ISSUER_URL
    )


def test_jwks_publishes_rsa_signature_keys_with_every_field(issuer: SandboxIssuer) -> None:
    (key,) = issuer.jwks()["keys"]
    assert set(key) == {"kty", "kid", "n", "e", "alg", "use"}
    assert (key["kty"], key["alg"], key["use"], key["e"]) == ("RSA", "RS256", "sig", "AQAB")
    assert key["kid"] == issuer.signing_key.kid


def test_an_actions_token_verifies_against_the_published_jwks(issuer: SandboxIssuer) -> None:
    token = issuer.mint_actions_token("acme/backend", audience=AUDIENCE, run_id="4242")
    claims = _verify_with_jwks(issuer, token)
    assert claims["repository"] == "acme/backend"
    assert claims["repository_owner"] == "acme"
    assert claims["run_id"] == "4242"
    assert claims["sub"] == "repo:acme/backend:ref:refs/heads/main"
    assert jwt.get_unverified_header(token)["typ"] == "JWT"


def test_actions_claims_carry_githubs_claim_set_as_strings(issuer: SandboxIssuer) -> None:
    claims = issuer.actions_claims("acme/backend", audience=AUDIENCE, run_id="7", run_attempt="2")
    expected = {
        "sub", "aud", "iss", "iat", "nbf", "exp", "jti", "ref", "sha", "repository",
        "repository_owner", "repository_owner_id", "repository_id", "repository_visibility",
        "actor", "actor_id", "run_id", "run_number", "run_attempt", "runner_environment",
        "workflow", "workflow_ref", "workflow_sha", "job_workflow_ref", "job_workflow_sha",
        "head_ref", "base_ref", "event_name", "ref_type",
    }  # fmt: skip
    assert expected <= set(claims)
    times = {"iat", "nbf", "exp"}
    assert all(isinstance(claims[name], str) for name in set(claims) - times)
    assert claims["exp"] - claims["iat"] == 300
    assert claims["run_attempt"] == "2"


def test_overrides_replace_claims(issuer: SandboxIssuer) -> None:
    claims = issuer.actions_claims("acme/backend", event_name="push", exp=1)
    assert claims["event_name"] == "push"
    assert claims["exp"] == 1
    assert claims["aud"] == "https://github.com/acme"  # GitHub's default audience


def test_buildkite_claims_include_ids_only_when_requested(issuer: SandboxIssuer) -> None:
    plain = issuer.buildkite_claims(
        organization_slug="acme", pipeline_slug="gpu-tests", audience=AUDIENCE
    )
    assert plain["organization_slug"] == "acme"
    assert plain["build_branch"] == "main"
    assert isinstance(plain["build_number"], int)
    assert "organization_id" not in plain and "pipeline_id" not in plain
    with_ids = issuer.buildkite_claims(
        organization_slug="acme",
        pipeline_slug="gpu-tests",
        audience=AUDIENCE,
        organization_id="org-uuid",
        pipeline_id="pipe-uuid",
    )
    assert (with_ids["organization_id"], with_ids["pipeline_id"]) == ("org-uuid", "pipe-uuid")
    assert with_ids["sub"].startswith("organization:acme:pipeline:gpu-tests:ref:refs/heads/main")


def test_rotation_publishes_old_and_new_keys_until_the_old_is_retired() -> None:
    issuer = SandboxIssuer(ISSUER_URL)
    old_token = issuer.mint_actions_token("acme/backend", audience=AUDIENCE)
    old_kid = issuer.signing_key.kid
    new_key = issuer.rotate_key()
    new_token = issuer.mint_actions_token("acme/backend", audience=AUDIENCE)

    assert jwt.get_unverified_header(new_token)["kid"] == new_key.kid != old_kid
    assert [key["kid"] for key in issuer.jwks()["keys"]] == [old_kid, new_key.kid]
    assert _verify_with_jwks(issuer, old_token)["repository"] == "acme/backend"

    issuer.retire_key(old_kid)
    assert [key["kid"] for key in issuer.jwks()["keys"]] == [new_key.kid]
    with pytest.raises(ValueError, match="only key"):
        issuer.retire_key(new_key.kid)


def test_alg_none_token_is_unsigned(issuer: SandboxIssuer) -> None:
    token = issuer.mint({"iss": ISSUER_URL}, alg="none")
    header, payload, signature = _segments(token)
    assert header["alg"] == "none" and signature == ""
    assert payload == {"iss": ISSUER_URL}


def test_hs256_token_is_hmac_keyed_with_the_public_pem(issuer: SandboxIssuer) -> None:
    token = issuer.mint({"iss": ISSUER_URL}, alg="HS256")
    signing_input, _, signature = token.rpartition(".")
    mac = hmac.new(issuer.signing_key.public_pem(), signing_input.encode(), hashlib.sha256)
    assert base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode() == signature
    assert _segments(token)[0]["alg"] == "HS256"


def test_headers_can_claim_a_kid_that_was_never_published(issuer: SandboxIssuer) -> None:
    token = issuer.mint({"iss": ISSUER_URL}, headers={"kid": "no-such-key"})
    assert jwt.get_unverified_header(token)["kid"] == "no-such-key"


async def test_discovery_document_points_at_the_jwks(client: httpx.AsyncClient) -> None:
    config = (await client.get("/oidc/.well-known/openid-configuration")).json()
    assert config["issuer"] == ISSUER_URL
    assert config["jwks_uri"] == f"{ISSUER_URL}/.well-known/jwks"
    assert config["id_token_signing_alg_values_supported"] == ["RS256"]
    assert "repository" in config["claims_supported"]


async def test_jwks_endpoint_serves_the_keys_and_counts_requests(
    issuer: SandboxIssuer, client: httpx.AsyncClient
) -> None:
    before = issuer.jwks_requests
    response = await client.get("/oidc/.well-known/jwks")
    assert response.json() == issuer.jwks()
    assert issuer.jwks_requests == before + 1


async def test_token_request_endpoint_works_like_the_actions_runtime(
    issuer: SandboxIssuer, client: httpx.AsyncClient
) -> None:
    request_token = issuer.issue_request_token(
        issuer.actions_claims("acme/backend", run_id="99", run_attempt="3")
    )
    # The Actions toolkit appends `&audience=` to ACTIONS_ID_TOKEN_REQUEST_URL.
    url = f"{issuer.token_request_url}&audience={AUDIENCE}"
    response = await client.get(url, headers={"Authorization": f"Bearer {request_token}"})
    assert response.status_code == 200
    claims = _verify_with_jwks(issuer, response.json()["value"])
    assert (claims["repository"], claims["run_id"], claims["run_attempt"]) == (
        "acme/backend",
        "99",
        "3",
    )


async def test_token_request_without_a_known_request_token_is_refused(
    issuer: SandboxIssuer, client: httpx.AsyncClient
) -> None:
    url = f"{issuer.token_request_url}&audience={AUDIENCE}"
    assert (await client.get(url)).status_code == 401
    refused = await client.get(url, headers={"Authorization": "Bearer made-up"})
    assert refused.status_code == 401

    request_token = issuer.issue_request_token(issuer.actions_claims("acme/backend"))
    issuer.revoke_request_token(request_token)
    revoked = await client.get(url, headers={"Authorization": f"Bearer {request_token}"})
    assert revoked.status_code == 401
