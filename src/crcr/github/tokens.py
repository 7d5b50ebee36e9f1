"""Installation ids and access tokens, cached in-process and in the shared state store.

Three layers, cheapest first: this process's memory (a warm token costs nothing), the
state store (instances share tokens, so a fleet does not mint one each), then GitHub.
Concurrent requests for the same cold entry share one GitHub call.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from crcr.stores.roles import Caches
from crcr.stores.state import StateStoreUnavailable

T = TypeVar("T")

INSTALLATION_NAMESPACE = "gh-installation"
TOKEN_NAMESPACE = "gh-token"  # noqa: S105 - a cache namespace, not a secret


@dataclass(frozen=True)
class InstallationToken:
    """An installation access token and when GitHub says it expires (epoch seconds)."""

    token: str
    expires_at: float

    def usable(self, now: float, margin: float) -> bool:
        """Whether the token has more than `margin` seconds left."""
        return now < self.expires_at - margin

    def to_json(self) -> str:
        """The form kept in the state store."""
        return json.dumps({"token": self.token, "expires_at": self.expires_at})

    @classmethod
    def from_json(cls, text: str) -> InstallationToken | None:
        """Parse the stored form; None when it is not ours (a corrupt entry is a miss)."""
        try:
            data = json.loads(text)
            return cls(str(data["token"]), float(data["expires_at"]))
        except (ValueError, KeyError, TypeError):
            return None

    def __repr__(self) -> str:
        return f"InstallationToken(token='***', expires_at={self.expires_at})"


class InstallationTokens:
    """Where the GitHub client gets the token for a repository.

    `scope` separates Apps (and GitHub hosts) sharing one store. Tokens are refreshed
    `refresh_margin` seconds before expiry so that a request never starts with a token
    that dies in flight. A store that cannot be reached is skipped, not fatal: GitHub
    is asked instead.
    """

    def __init__(
        self,
        store: Caches | None,
        lookup_installation: Callable[[str], Awaitable[int]],
        create_token: Callable[[int], Awaitable[InstallationToken]],
        *,
        scope: str,
        clock: Callable[[], float] = time.time,
        refresh_margin: float = 300.0,
        installation_ttl: float = 3600.0,
    ) -> None:
        self._store = store
        self._lookup_installation = lookup_installation
        self._create_token = create_token
        self._scope = scope
        self._clock = clock
        self._margin = refresh_margin
        self._installation_ttl = installation_ttl
        self._installations: dict[str, tuple[int, float]] = {}
        self._tokens: dict[int, InstallationToken] = {}
        self._in_flight: dict[str, asyncio.Future[Any]] = {}

    async def token_for(self, repo: str) -> str:
        """A token that may act on `repo`, valid for at least `refresh_margin` seconds."""
        installation_id = await self.installation_id(repo)
        token = self._tokens.get(installation_id)
        if token is not None and token.usable(self._clock(), self._margin):
            return token.token
        fresh = await self._coalesced(
            f"token:{installation_id}", lambda: self._load_token(installation_id)
        )
        return fresh.token

    async def installation_id(self, repo: str) -> int:
        """The App's installation covering `repo` (GitHubNotFound when not installed)."""
        key = repo.lower()
        cached = self._installations.get(key)
        if cached is not None and self._clock() < cached[1]:
            return cached[0]
        return await self._coalesced(f"installation:{key}", lambda: self._load_installation(key))

    async def forget(self, repo: str) -> None:
        """Drop what we know for `repo` (after GitHub refused its token or installation)."""
        key = repo.lower()
        cached = self._installations.pop(key, None)
        await self._store_delete(INSTALLATION_NAMESPACE, key)
        if cached is not None:
            self._tokens.pop(cached[0], None)
            await self._store_delete(TOKEN_NAMESPACE, str(cached[0]))

    async def _load_installation(self, key: str) -> int:
        stored = await self._store_get(INSTALLATION_NAMESPACE, key)
        if stored is not None and stored.isdigit():
            installation_id = int(stored)
        else:
            installation_id = await self._lookup_installation(key)
            await self._store_set(
                INSTALLATION_NAMESPACE, key, str(installation_id), self._installation_ttl
            )
        self._installations[key] = (installation_id, self._clock() + self._installation_ttl)
        return installation_id

    async def _load_token(self, installation_id: int) -> InstallationToken:
        now = self._clock()
        stored = await self._store_get(TOKEN_NAMESPACE, str(installation_id))
        token = InstallationToken.from_json(stored) if stored is not None else None
        if token is None or not token.usable(now, self._margin):
            token = await self._create_token(installation_id)
            ttl = token.expires_at - self._margin - self._clock()
            if ttl > 0:
                await self._store_set(TOKEN_NAMESPACE, str(installation_id), token.to_json(), ttl)
        self._tokens[installation_id] = token
        return token

    async def _coalesced(self, key: str, load: Callable[[], Awaitable[T]]) -> T:
        """Run `load` once for all concurrent callers asking for the same `key`.

        The load runs as its own task (shielded), so one caller being cancelled does not
        fail the others waiting on the same result.
        """
        future = self._in_flight.get(key)
        if future is None:
            future = asyncio.ensure_future(load())
            self._in_flight[key] = future
            future.add_done_callback(lambda done: self._settle(key, done))
        result: T = await asyncio.shield(future)
        return result

    def _settle(self, key: str, done: asyncio.Future[Any]) -> None:
        if self._in_flight.get(key) is done:
            del self._in_flight[key]
        if not done.cancelled():
            done.exception()  # mark retrieved: the waiters re-raise it themselves

    def _store_key(self, key: str) -> str:
        return f"{self._scope}:{key}"

    async def _store_get(self, namespace: str, key: str) -> str | None:
        if self._store is None:
            return None
        try:
            return await self._store.cache_get(namespace, self._store_key(key))
        except StateStoreUnavailable:
            return None

    async def _store_set(self, namespace: str, key: str, value: str, ttl: float) -> None:
        if self._store is None:
            return
        try:
            await self._store.cache_set(namespace, self._store_key(key), value, ttl)
        except StateStoreUnavailable:
            return

    async def _store_delete(self, namespace: str, key: str) -> None:
        if self._store is None:
            return
        try:
            await self._store.cache_delete(namespace, self._store_key(key))
        except StateStoreUnavailable:
            return
