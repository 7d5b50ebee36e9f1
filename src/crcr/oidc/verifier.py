"""Verify a callback's OIDC token and say which repository sent it (SPEC §5 step 1)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import jwt

from crcr.config.settings import OidcIssuer, Settings
from crcr.oidc.claims import (
    MAX_LEEWAY_SECONDS,
    TokenRejected,
    UnverifiedToken,
    VerifiedIdentity,
    bearer_token,
    check_registered_claims,
    check_times,
    checked_key_id,
    identity_from_claims,
    parse_token,
    unverified_issuer,
)
from crcr.oidc.jwks import JwksCache, JwksStore


def verified_claims(
    token: UnverifiedToken, key: jwt.PyJWK, *, issuer: str, audience: str
) -> Mapping[str, Any]:
    """Check the RS256 signature with `key`, then `iss` and `aud`; times are checked apart.

    The signature is checked by PyJWT's own RS256 implementation (`key.Algorithm`), on
    the token parsed once by `parse_token`.
    """
    if not key.Algorithm.verify(token.signing_input, key.key, token.signature):
        raise TokenRejected("token signature does not match the issuer's key")
    check_registered_claims(token.claims, issuer=issuer, audience=audience)
    return token.claims


class OidcVerifier:
    """Turns an `Authorization` header into a `VerifiedIdentity` or `TokenRejected`.

    Only issuers from the operator's settings are trusted; the token's unverified
    `iss` merely selects which of them to verify against. State-store failures
    propagate as `StateStoreUnavailable` (the caller answers 503, not 401).
    """

    def __init__(
        self,
        issuers: Sequence[OidcIssuer],
        audience: str,
        store: JwksStore,
        http: httpx.AsyncClient,
        *,
        clock: Callable[[], float] = time.time,
        leeway: float = MAX_LEEWAY_SECONDS,
        fetch_timeout: float = 10.0,
    ) -> None:
        if not 0 <= leeway <= MAX_LEEWAY_SECONDS:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY_SECONDS} seconds")
        self._issuers = {issuer.issuer: issuer for issuer in issuers}
        self._audience = audience
        self._clock = clock
        self._leeway = leeway
        self._keys = JwksCache(store, http, clock=clock, timeout=fetch_timeout)

    @classmethod
    def from_settings(
        cls, settings: Settings, store: JwksStore, http: httpx.AsyncClient
    ) -> OidcVerifier:
        """Build the verifier `crcr serve` uses; JWKS fetches get `CRCR_GITHUB_TIMEOUT`."""
        return cls(
            settings.oidc_issuers,
            settings.oidc_audience,
            store,
            http,
            fetch_timeout=settings.github_timeout,
        )

    async def verify(self, authorization: str | None) -> VerifiedIdentity:
        """Verify the bearer token and return who it speaks for."""
        token = parse_token(bearer_token(authorization))
        kid = checked_key_id(token)
        issuer = self._issuers.get(unverified_issuer(token))
        if issuer is None:
            raise TokenRejected("token issuer (iss) is not trusted")
        key = await self._keys.key_for(issuer, kid)
        claims = verified_claims(token, key, issuer=issuer.issuer, audience=self._audience)
        check_times(claims, now=self._clock(), leeway=self._leeway)
        return identity_from_claims(issuer, claims)
