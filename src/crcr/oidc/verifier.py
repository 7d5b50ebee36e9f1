"""Verify a callback's OIDC token and say which repository sent it (SPEC §5 step 1)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import jwt

from crcr.oidc.claims import (
    ALLOWED_ALGORITHM,
    MAX_LEEWAY_SECONDS,
    TokenRejected,
    VerifiedIdentity,
    bearer_token,
    check_times,
    checked_key_id,
    identity_from_claims,
    unverified_issuer,
)
from crcr.oidc.jwks import JwksCache
from crcr.settings import OidcIssuer, Settings
from crcr.stores.state import StateStore


def verified_claims(token: str, key: jwt.PyJWK, *, issuer: str, audience: str) -> Mapping[str, Any]:
    """Check signature, `iss` and `aud`; times are checked separately with our clock."""
    try:
        return jwt.decode(
            token,
            key=key,
            algorithms=[ALLOWED_ALGORITHM],
            audience=audience,
            issuer=issuer,
            options={
                "require": ["exp", "iss", "aud"],
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
            },
        )
    except jwt.InvalidSignatureError:
        raise TokenRejected("token signature does not match the issuer's key") from None
    except jwt.InvalidAudienceError:
        raise TokenRejected("token audience (aud) is not this relay's") from None
    except jwt.InvalidIssuerError:
        raise TokenRejected("token issuer (iss) does not match the trusted issuer") from None
    except jwt.MissingRequiredClaimError as exc:
        raise TokenRejected(f"token lacks the required {exc.claim} claim") from None
    except jwt.DecodeError:
        raise TokenRejected("token is not a well-formed JWT") from None
    except jwt.InvalidTokenError:
        raise TokenRejected("token is invalid") from None


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
        store: StateStore,
        http: httpx.AsyncClient,
        *,
        clock: Callable[[], float] = time.time,
        leeway: float = MAX_LEEWAY_SECONDS,
    ) -> None:
        if not 0 <= leeway <= MAX_LEEWAY_SECONDS:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY_SECONDS} seconds")
        self._issuers = {issuer.issuer: issuer for issuer in issuers}
        self._audience = audience
        self._clock = clock
        self._leeway = leeway
        self._keys = JwksCache(store, http, clock=clock)

    @classmethod
    def from_settings(
        cls, settings: Settings, store: StateStore, http: httpx.AsyncClient
    ) -> OidcVerifier:
        """Build the verifier `crcr serve` uses."""
        return cls(settings.oidc_issuers, settings.oidc_audience, store, http)

    async def verify(self, authorization: str | None) -> VerifiedIdentity:
        """Verify the bearer token and return who it speaks for."""
        token = bearer_token(authorization)
        kid = checked_key_id(token)
        issuer = self._issuers.get(unverified_issuer(token))
        if issuer is None:
            raise TokenRejected("token issuer (iss) is not trusted")
        key = await self._keys.key_for(issuer, kid)
        claims = verified_claims(token, key, issuer=issuer.issuer, audience=self._audience)
        check_times(claims, now=self._clock(), leeway=self._leeway)
        return identity_from_claims(issuer, claims)
