"""Issuers' signing keys: fetched over HTTP, cached in the state store and in process.

A token naming an unknown `kid` may mean the issuer rotated its keys, so it triggers
a refetch, but at most once a minute per issuer across all relay instances (SPEC §5
step 1): otherwise anyone could make the relay hammer GitHub's JWKS endpoint by
sending tokens with made-up key ids. The same gate guards the fetch when nothing is
cached at all, and a failed fetch is remembered for that minute: an issuer that is
down is asked once a minute, not once per callback, and callbacks meanwhile fail at
once with `KeysUnavailable`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import jwt

from crcr.config.settings import OidcIssuer
from crcr.oidc.claims import ALLOWED_ALGORITHM, KeysUnavailable, TokenRejected
from crcr.stores.roles import Caches, Idempotency

JWKS_TTL_SECONDS = 3600.0
REFRESH_INTERVAL_SECONDS = 60.0
CACHE_NAMESPACE = "jwks"
REFRESH_NAMESPACE = "jwks-refreshed-at"
FIRST_FETCH_NAMESPACE = "jwks-first-fetched-at"
FAILED_NAMESPACE = "jwks-failed-at"
UNAVAILABLE = "the issuer's signing keys could not be fetched"
WAIT_POLL_SECONDS = 0.05


class JwksStore(Caches, Idempotency, Protocol):
    """The state store as the key cache sees it: cached keys, and once-only fetch claims."""


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
        store: JwksStore,
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
        self._last_first: dict[str, float] = {}
        self._failed_at: dict[str, float] = {}
        self._fetching: dict[str, asyncio.Task[KeySet]] = {}

    async def key_for(self, issuer: OidcIssuer, kid: str) -> jwt.PyJWK:
        """Return the key `kid` of `issuer`, or reject the token that names it."""
        key_set = self._fresh(self._memory.get(issuer.issuer))
        if key_set is None or kid not in key_set.keys:
            # Another instance may have fetched already: the store is cheaper than HTTP.
            key_set = self._fresh(await self._load_stored(issuer)) or key_set
        if key_set is None:
            key_set = await self._first_keys(issuer)
        elif kid not in key_set.keys and await self._may_refresh(issuer):
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
        """Take this minute's single refetch for an unknown kid, if no one else has."""
        return await self._take_the_minute(issuer, REFRESH_NAMESPACE, self._last_refresh)

    async def _may_fetch_first(self, issuer: OidcIssuer) -> bool:
        """Take this minute's single fetch of keys nobody has cached, if no one else has.

        A gate of its own, so that the first fetch does not spend the minute's refetch:
        keys rotated just after a cold start are still picked up at once.
        """
        return await self._take_the_minute(issuer, FIRST_FETCH_NAMESPACE, self._last_first)

    async def _take_the_minute(
        self, issuer: OidcIssuer, namespace: str, taken: dict[str, float]
    ) -> bool:
        """Claim the issuer's once-a-minute fetch of one kind (`namespace`).

        The store holds when the last such fetch happened (so the limit holds across
        instances and across the turn of a minute); `claim_once` on the current
        minute settles a race between instances that read the same old time.
        """
        now = self._clock()
        if now - taken.get(issuer.issuer, -1e18) < self._refresh_interval:
            return False
        last = _seconds(await self._store.cache_get(namespace, issuer.issuer))
        if last is not None and now - last < self._refresh_interval:
            taken[issuer.issuer] = last
            return False
        window = int(now // self._refresh_interval)
        claimed = await self._store.claim_once(
            f"{namespace}:{issuer.issuer}:{window}", int(2 * self._refresh_interval)
        )
        if not claimed:
            return False
        taken[issuer.issuer] = now
        await self._store.cache_set(namespace, issuer.issuer, repr(now), 2 * self._refresh_interval)
        return True

    def _failed_recently(self, failed_at: float | None) -> bool:
        return failed_at is not None and self._clock() - failed_at < self._refresh_interval

    async def _known_down(self, issuer: OidcIssuer) -> bool:
        """Whether a fetch failed less than a minute ago, here or on another instance."""
        if self._failed_recently(self._failed_at.get(issuer.issuer)):
            return True
        failed_at = _seconds(await self._store.cache_get(FAILED_NAMESPACE, issuer.issuer))
        if failed_at is not None and self._failed_recently(failed_at):
            self._failed_at[issuer.issuer] = failed_at
            return True
        return False

    async def _first_keys(self, issuer: OidcIssuer) -> KeySet:
        """Keys when none are cached: one fetch a minute across instances, failures kept."""
        if await self._known_down(issuer):
            raise KeysUnavailable(UNAVAILABLE)
        if await self._may_fetch_first(issuer):
            return await self._fetch(issuer)
        return await self._outcome_of_the_minutes_fetch(issuer)

    async def _outcome_of_the_minutes_fetch(self, issuer: OidcIssuer) -> KeySet:
        """Wait for the fetch another request holds, here or on another instance.

        One of this instance's is awaited. Another instance's is watched in the store,
        where its keys arrive, or its failure does, which then fails this request too
        without asking the issuer again until the minute has passed.
        """
        deadline = time.monotonic() + self._timeout + 1.0
        while True:
            if issuer.issuer in self._fetching:
                return await self._fetch(issuer)
            key_set = self._fresh(self._memory.get(issuer.issuer))
            key_set = key_set or self._fresh(await self._load_stored(issuer))
            if key_set is not None:
                return key_set
            if await self._known_down(issuer):
                raise KeysUnavailable(UNAVAILABLE)
            if time.monotonic() >= deadline:
                # The fetch's holder is presumed gone; this instance waits out the minute.
                self._failed_at[issuer.issuer] = self._clock()
                raise KeysUnavailable(UNAVAILABLE)
            await asyncio.sleep(WAIT_POLL_SECONDS)

    async def _fetch(self, issuer: OidcIssuer) -> KeySet:
        """Fetch in a task of its own, shared by this instance's requests meanwhile.

        The callback gives up on its checks sooner than a slow issuer times out; the
        task outlives the request, so the keys or the failure still reach the store.
        """
        task = self._fetching.get(issuer.issuer)
        if task is None:
            task = asyncio.create_task(self._fetch_and_record(issuer))
            self._fetching[issuer.issuer] = task  # the loop keeps only weak references
            task.add_done_callback(lambda done: self._fetch_finished(issuer.issuer, done))
        return await asyncio.shield(task)

    def _fetch_finished(self, issuer_url: str, task: asyncio.Task[KeySet]) -> None:
        del self._fetching[issuer_url]
        if not task.cancelled():
            task.exception()  # seen by the requests that awaited it, or by no one

    async def _fetch_and_record(self, issuer: OidcIssuer) -> KeySet:
        try:
            response = await self._http.get(issuer.jwks_endpoint, timeout=self._timeout)
            response.raise_for_status()
            key_set = parse_jwks(response.json(), fetched_at=self._clock())
        except (httpx.HTTPError, ValueError, KeysUnavailable) as exc:
            failed_at = self._clock()
            self._failed_at[issuer.issuer] = failed_at
            await self._store.cache_set(
                FAILED_NAMESPACE, issuer.issuer, repr(failed_at), 2 * self._refresh_interval
            )
            reason = exc.reason if isinstance(exc, KeysUnavailable) else UNAVAILABLE
            raise KeysUnavailable(reason) from None
        self._failed_at.pop(issuer.issuer, None)
        self._memory[issuer.issuer] = key_set
        stored = json.dumps({"fetched_at": key_set.fetched_at, "jwks": key_set.document})
        await self._store.cache_set(CACHE_NAMESPACE, issuer.issuer, stored, self._ttl)
        return key_set
