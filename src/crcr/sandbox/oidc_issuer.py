"""The sandbox OIDC issuer: RS256 keys, a JWKS, and GitHub-Actions/Buildkite-style tokens.

It plays both token services a downstream CI talks to: the Actions runtime's token
request endpoint (`ACTIONS_ID_TOKEN_REQUEST_URL`) and, for tests, direct minting of
Buildkite-shaped tokens. `mint` also forges the broken tokens an attacker would try.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from crcr.sandbox.webhooks.objects import stable_id

ACTIONS_TOKEN_LIFETIME = 300  # seconds; GitHub's tokens are short-lived (exp = iat + 5 min)
BUILDKITE_TOKEN_LIFETIME = 300


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_uint(value: int) -> str:
    return _b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))


@dataclass(frozen=True)
class SigningKey:
    """One RSA key pair and its key id (the RFC 7638 thumbprint of its public half)."""

    kid: str
    private_key: rsa.RSAPrivateKey

    @classmethod
    def generate(cls, *, bits: int = 2048) -> SigningKey:
        """Make a fresh key pair; the kid is derived from the public key."""
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        numbers = private_key.public_key().public_numbers()
        canonical = json.dumps(
            {"e": _b64url_uint(numbers.e), "kty": "RSA", "n": _b64url_uint(numbers.n)},
            separators=(",", ":"),
            sort_keys=True,
        )
        return cls(
            kid=_b64url(hashlib.sha256(canonical.encode()).digest()), private_key=private_key
        )

    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK, as it appears in the issuer's JWKS."""
        numbers = self.private_key.public_key().public_numbers()
        return {
            "kty": "RSA",
            "kid": self.kid,
            "n": _b64url_uint(numbers.n),
            "e": _b64url_uint(numbers.e),
            "alg": "RS256",
            "use": "sig",
        }

    def public_pem(self) -> bytes:
        """The public key as PEM: what an algorithm-confusion attacker uses as HMAC secret."""
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


class SandboxIssuer:
    """An OIDC issuer served by the sandbox under `<issuer>/…`.

    Keys are kept in order of creation; the newest is the signing key and every key
    not retired is published, as real issuers do during a rotation. Passing a `key`
    saves generating one (about 70 ms), which adds up in test suites.
    """

    def __init__(
        self,
        issuer: str,
        *,
        key: SigningKey | None = None,
        key_bits: int = 2048,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self._key_bits = key_bits
        self._clock = clock
        self._keys: list[SigningKey] = [key or SigningKey.generate(bits=key_bits)]
        self._request_tokens: dict[str, dict[str, Any]] = {}
        self.jwks_requests = 0
        self.jwks_unavailable = False

    # --- keys ------------------------------------------------------------------
    @property
    def signing_key(self) -> SigningKey:
        """The key new tokens are signed with."""
        return self._keys[-1]

    @property
    def published_keys(self) -> list[SigningKey]:
        """Every key in the JWKS, oldest first."""
        return list(self._keys)

    def rotate_key(self, key: SigningKey | None = None) -> SigningKey:
        """Start signing with a new key; the old ones stay published until retired."""
        key = key or SigningKey.generate(bits=self._key_bits)
        self._keys.append(key)
        return key

    def retire_key(self, kid: str) -> None:
        """Stop publishing a key (tokens it signed stop verifying once caches expire)."""
        remaining = [key for key in self._keys if key.kid != kid]
        if not remaining:
            raise ValueError("cannot retire the issuer's only key")
        self._keys = remaining

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The JSON Web Key Set document."""
        return {"keys": [key.public_jwk() for key in self._keys]}

    # --- discovery -------------------------------------------------------------
    @property
    def jwks_url(self) -> str:
        """Where the JWKS is served (GitHub's path convention)."""
        return f"{self.issuer}/.well-known/jwks"

    @property
    def token_request_url(self) -> str:
        """The value for `ACTIONS_ID_TOKEN_REQUEST_URL`.

        It already carries a query string because the Actions toolkit appends
        `&audience=…` to it rather than building the query itself.
        """
        return f"{self.issuer}/token?api-version=2.0"

    def openid_configuration(self) -> dict[str, Any]:
        """The discovery document, shaped like GitHub Actions' own."""
        return {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_url,
            "subject_types_supported": ["public", "pairwise"],
            "response_types_supported": ["id_token"],
            "claims_supported": sorted(self.actions_claims("octo-org/octo-repo")),
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid"],
        }

    # --- minting ---------------------------------------------------------------
    def mint(
        self,
        claims: Mapping[str, Any],
        *,
        key: SigningKey | None = None,
        alg: str = "RS256",
        headers: Mapping[str, Any] | None = None,
        hmac_secret: bytes | None = None,
    ) -> str:
        """Sign `claims` as they are; tests use the options to forge bad tokens.

        `alg="none"` yields an unsigned token; `alg="HS256"` signs with `hmac_secret`,
        by default the signing key's public PEM (the algorithm-confusion attack).
        `headers` are merged over `{"typ": "JWT", "alg": alg, "kid": key.kid}`;
        set `"kid"` there to claim a key id the issuer never published.
        """
        key = key or self.signing_key
        header: dict[str, Any] = {"typ": "JWT", "alg": alg, "kid": key.kid, **(headers or {})}
        if alg.upper().startswith("RS") or alg.upper().startswith("PS"):
            extra = {k: v for k, v in header.items() if k != "alg"}
            return jwt.encode(dict(claims), key.private_key, algorithm=alg, headers=extra)
        # PyJWT refuses to produce these on purpose, so they are assembled by hand.
        signing_input = (
            _b64url(json.dumps(header, separators=(",", ":")).encode())
            + "."
            + _b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
        )
        if alg.lower() == "none":
            return signing_input + "."
        if alg.upper().startswith("HS"):
            digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}
            secret = hmac_secret if hmac_secret is not None else key.public_pem()
            mac = hmac.new(secret, signing_input.encode(), digest[alg.upper()]).digest()
            return signing_input + "." + _b64url(mac)
        raise ValueError(f"the sandbox cannot mint alg {alg!r}")

    def _time_claims(self, lifetime: int) -> dict[str, Any]:
        now = int(self._clock())
        return {"iat": now, "nbf": now, "exp": now + lifetime, "jti": str(uuid.uuid4())}

    def actions_claims(
        self,
        repository: str,
        *,
        audience: str | None = None,
        run_id: str = "1",
        run_attempt: str = "1",
        job_workflow_ref: str | None = None,
        **overrides: Any,
    ) -> dict[str, Any]:
        """The claim set GitHub Actions puts in a job's OIDC token.

        Defaults describe a `repository_dispatch` run on the default branch, which is
        how crcr's downstream workflows start. Every value GitHub sends is a string.
        """
        owner, _, _ = repository.partition("/")
        ref = overrides.get("ref", "refs/heads/main")
        workflow_ref = f"{repository}/.github/workflows/crcr.yml@{ref}"
        sha = hashlib.sha1(f"{repository}@{ref}".encode()).hexdigest()  # noqa: S324 - not security
        claims: dict[str, Any] = {
            "sub": f"repo:{repository}:ref:{ref}",
            "aud": audience or f"https://github.com/{owner}",
            "iss": self.issuer,
            "ref": ref,
            "sha": sha,
            "repository": repository,
            "repository_owner": owner,
            "repository_owner_id": str(stable_id(owner)),
            "repository_id": str(stable_id(repository)),
            "repository_visibility": "public",
            "actor": "crcr-bot",
            "actor_id": str(stable_id("crcr-bot")),
            "run_id": str(run_id),
            "run_number": str(run_id)[-4:],
            "run_attempt": str(run_attempt),
            "runner_environment": "self-hosted",
            "workflow": "crcr",
            "workflow_ref": workflow_ref,
            "workflow_sha": sha,
            "job_workflow_ref": job_workflow_ref or workflow_ref,
            "job_workflow_sha": sha,
            "head_ref": "",
            "base_ref": "",
            "event_name": "repository_dispatch",
            "ref_type": "branch",
            **self._time_claims(ACTIONS_TOKEN_LIFETIME),
        }
        claims.update(overrides)
        return claims

    def mint_actions_token(
        self,
        repository: str,
        *,
        audience: str | None = None,
        run_id: str = "1",
        run_attempt: str = "1",
        job_workflow_ref: str | None = None,
        **overrides: Any,
    ) -> str:
        """Mint a GitHub-Actions-style token; `overrides` replace or add claims."""
        return self.mint(
            self.actions_claims(
                repository,
                audience=audience,
                run_id=run_id,
                run_attempt=run_attempt,
                job_workflow_ref=job_workflow_ref,
                **overrides,
            )
        )

    def buildkite_claims(
        self,
        *,
        organization_slug: str,
        pipeline_slug: str,
        audience: str,
        organization_id: str | None = None,
        pipeline_id: str | None = None,
        build_branch: str = "main",
        build_number: int = 1,
        **overrides: Any,
    ) -> dict[str, Any]:
        """The claim set of `buildkite-agent oidc request-token`.

        `organization_id` / `pipeline_id` are optional claims a job asks for with
        `--claim organization_id,pipeline_id`; they are included only when given.
        """
        commit = hashlib.sha1(f"{pipeline_slug}#{build_number}".encode()).hexdigest()  # noqa: S324
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": (
                f"organization:{organization_slug}:pipeline:{pipeline_slug}"
                f":ref:refs/heads/{build_branch}:commit:{commit}:step:test"
            ),
            "aud": audience,
            "organization_slug": organization_slug,
            "pipeline_slug": pipeline_slug,
            "build_number": build_number,
            "build_branch": build_branch,
            "build_tag": None,
            "build_commit": commit,
            "build_source": "api",
            "step_key": "test",
            "job_id": str(uuid.uuid4()),
            "agent_id": str(uuid.uuid4()),
            "runner_environment": "self-hosted",
            **self._time_claims(BUILDKITE_TOKEN_LIFETIME),
        }
        if organization_id is not None:
            claims["organization_id"] = organization_id
        if pipeline_id is not None:
            claims["pipeline_id"] = pipeline_id
        claims.update(overrides)
        return claims

    def mint_buildkite_token(self, **kwargs: Any) -> str:
        """Mint a Buildkite-style token; takes `buildkite_claims`' arguments."""
        return self.mint(self.buildkite_claims(**kwargs))

    # --- the Actions runtime's token request endpoint ---------------------------
    def issue_request_token(self, claims: Mapping[str, Any]) -> str:
        """Hand out an `ACTIONS_ID_TOKEN_REQUEST_TOKEN` bound to a claim set.

        `claims` is typically `actions_claims(...)`; each request made with the
        returned bearer token gets those claims with fresh times and the audience
        the request asks for.
        """
        request_token = secrets.token_urlsafe(32)
        self._request_tokens[request_token] = dict(claims)
        return request_token

    def revoke_request_token(self, request_token: str) -> None:
        """Forget a request token (the job finished)."""
        self._request_tokens.pop(request_token, None)

    async def _token_endpoint(self, request: Request) -> JSONResponse:
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        template = self._request_tokens.get(credentials) if scheme.lower() == "bearer" else None
        if template is None:
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        claims = {**template, **self._time_claims(ACTIONS_TOKEN_LIFETIME)}
        audience = request.query_params.get("audience")
        if audience:
            claims["aud"] = audience
        return JSONResponse({"count": 1, "value": self.mint(claims)})

    async def _jwks_endpoint(self, request: Request) -> JSONResponse:
        self.jwks_requests += 1
        if self.jwks_unavailable:
            return JSONResponse({"message": "unavailable"}, status_code=503)
        return JSONResponse(self.jwks())

    async def _configuration_endpoint(self, request: Request) -> JSONResponse:
        return JSONResponse(self.openid_configuration())

    def routes(self) -> list[BaseRoute]:
        """Routes to mount at the issuer URL's path (e.g. `Mount("/oidc", routes=…)`)."""
        return [
            Route("/.well-known/openid-configuration", self._configuration_endpoint),
            Route("/.well-known/jwks", self._jwks_endpoint),
            Route("/token", self._token_endpoint),
        ]
