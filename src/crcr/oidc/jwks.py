"""Issuers' signing keys: fetched over HTTP, cached in the state store and in process.

A token naming an unknown `kid` may mean the issuer rotated its keys, so it triggers
a refetch, but at most once a minute per issuer across all relay instances (SPEC §5
step 1): otherwise anyone could make the relay hammer GitHub's JWKS endpoint by
sending tokens with made-up key ids.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from crcr.oidc.claims import ALLOWED_ALGORITHM, KeysUnavailable, TokenRejected
from crcr.settings import OidcIssuer
from crcr.stores.state import StateStore

JWKS_TTL_SECONDS = 3600.0
REFRESH_INTERVAL_SECONDS = 60.0
CACHE_NAMESPACE = "jwks"
REFRESH_NAMESPACE = "jwks-refreshed-at"


@dataclass(frozen=True)
class KeySet:
    """One issuer's published keys, by kid, and when they were fetched."""

    keys: Mapping[str, jwt.PyJWK]
    document: Mapping[str, Any]
    fetched_at: float


def parse_jwks(document: Any, *, fetched_at: float) -> KeySet:
    """Keep the RSA signature keys of a JWKS document; skip keys PyJWT cannot load."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeysUnavailable("the issuer's JWKS is not a key set document")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("kty") != "RSA":
            continue
        if entry.get("use", "sig") != "sig" or not isinstance(entry.get("kid"), str):
            continue
        try:
            keys[entry["kid"]] = jwt.PyJWK(entry, algorithm=ALLOWED_ALGORITHM)
        except jwt.PyJWKError:
            continue
    return KeySet(keys=keys, document=document, fetched_at=fetched_at)


def _seconds(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


class JwksCache:
    """Find the public key for (issuer, kid), fetching as rarely as the SPEC allows."""

    def __init__(
        self,
        store: StateStore,
        http: httpx.AsyncClient,
        *,
        clock: Callable[[], float] = time.time,
        ttl: float = JWKS_TTL_SECONDS,
        refresh_interval: float = REFRESH_INTERVAL_SECONDS,
        timeout: float = 10.0,
    ) -> None:
        self._store = store
        self._http = http
        self._clock = clock
        self._ttl = ttl
        self._refresh_interval = refresh_interval
        self._timeout = timeout
        self._memory: dict[str, KeySet] = {}
        self._last_refresh: dict[str, float] = {}

    async def key_for(self, issuer: OidcIssuer, kid: str) -> jwt.PyJWK:
        """Return the key `kid` of `issuer`, or reject the token that names it."""
        key_set = self._fresh(self._memory.get(issuer.issuer))
        if key_set is None or kid not in key_set.keys:
            # Another instance may have fetched already: the store is cheaper than HTTP.
            key_set = self._fresh(await self._load_stored(issuer)) or key_set
        if key_set is None or (kid not in key_set.keys and await self._may_refresh(issuer)):
            key_set = await self._fetch(issuer)
        key = key_set.keys.get(kid)
        if key is None:
            raise TokenRejected("token is signed with a key the issuer does not publish (kid)")
        return key

    def _fresh(self, key_set: KeySet | None) -> KeySet | None:
        if key_set is None or self._clock() >= key_set.fetched_at + self._ttl:
            return None
        return key_set

    async def _load_stored(self, issuer: OidcIssuer) -> KeySet | None:
        text = await self._store.cache_get(CACHE_NAMESPACE, issuer.issuer)
        if text is None:
            return None
        try:
            stored = json.loads(text)
            key_set = parse_jwks(stored["jwks"], fetched_at=float(stored["fetched_at"]))
        except (ValueError, KeyError, TypeError, KeysUnavailable):
            return None  # a corrupt cache entry is as good as none
        self._memory[issuer.issuer] = key_set
        return key_set

    async def _may_refresh(self, issuer: OidcIssuer) -> bool:
        """Take this minute's single refetch for the issuer, if no one else has.

        The store holds when the last refetch happened (so the limit holds across
        instances and across the turn of a minute); `claim_once` on the current
        minute settles a race between instances that read the same old time.
        """
        now = self._clock()
        if now - self._last_refresh.get(issuer.issuer, -1e18) < self._refresh_interval:
            return False
        last = _seconds(await self._store.cache_get(REFRESH_NAMESPACE, issuer.issuer))
        if last is not None and now - last < self._refresh_interval:
            self._last_refresh[issuer.issuer] = last
            return False
        window = int(now // self._refresh_interval)
        claimed = await self._store.claim_once(
            f"jwks-refresh:{issuer.issuer}:{window}", int(2 * self._refresh_interval)
        )
        if not claimed:
            return False
        self._last_refresh[issuer.issuer] = now
        await self._store.cache_set(
            REFRESH_NAMESPACE, issuer.issuer, repr(now), 2 * self._refresh_interval
        )
        return True

    async def _fetch(self, issuer: OidcIssuer) -> KeySet:
        try:
            response = await self._http.get(issuer.jwks_endpoint, timeout=self._timeout)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError):
            raise KeysUnavailable("the issuer's signing keys could not be fetched") from None
        key_set = parse_jwks(document, fetched_at=self._clock())
        self._memory[issuer.issuer] = key_set
        stored = json.dumps({"fetched_at": key_set.fetched_at, "jwks": document})
        await self._store.cache_set(CACHE_NAMESPACE, issuer.issuer, stored, self._ttl)
        return key_set
