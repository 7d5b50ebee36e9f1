"""The allowlist in force: fetched from its source, shared through the state store, and
kept at its last good version whenever the source fails or turns invalid (SPEC §3)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client import Counter, Gauge

from crcr.github.errors import GitHubError
from crcr.relay.allowlist.location import (
    AllowlistLocation,
    FileLocation,
    GitHubBlobLocation,
    UrlLocation,
    parse_location,
    ttl_floor,
)
from crcr.relay.allowlist.model import Allowlist, AllowlistError, Level, parse_allowlist
from crcr.settings import Settings, SettingsError
from crcr.stores.state import StateStore, StateStoreUnavailable

logger = logging.getLogger(__name__)

FetchContents = Callable[[str, str, str], Awaitable[bytes]]
"""`(repo, path, ref) -> bytes`: the GitHub client's contents API read."""

# No real allowlist comes near this; it bounds what a broken or hostile source can cost.
MAX_ALLOWLIST_BYTES = 1024 * 1024
CACHE_NAMESPACE = "allowlist"
# The shared copy outlives its TTL by far: it is the last good allowlist a new instance
# falls back on when the source is down at start-up.
LAST_GOOD_RETENTION = 30 * 24 * 3600
# After a failed refresh, how long the last good allowlist is used before asking again.
RETRY_AFTER_FAILURE = 60.0

REFRESH_FAILURES = Counter(
    "crcr_allowlist_refresh_failures",
    "Allowlist refreshes that failed; the last good allowlist stayed in force.",
    ["reason"],
)
RELOADS = Counter(
    "crcr_allowlist_reloads",
    "Allowlists put in force, by where they came from: fetched from the source (`file`, "
    "`url`, `github`) or the copy another instance shared through the state store "
    "(`shared`).",
    ["source"],
)
RELOAD_SOURCES = ("file", "url", "github", "shared")
LAST_SUCCESS = Gauge(
    "crcr_allowlist_last_success_timestamp_seconds",
    "When the allowlist in force was fetched from its source (Unix time).",
    multiprocess_mode="max",  # across workers, the newest fetch
)


class AllowlistUnavailable(Exception):
    """No valid allowlist has ever been loaded and the source cannot provide one."""


class AllowlistFetchError(Exception):
    """The source could not be read; the message is safe to log (no credentials)."""


@dataclass(frozen=True)
class _Loaded:
    allowlist: Allowlist
    text: str
    fetched_at: float


class AllowlistSource:
    """Hands out the current allowlist; a warm lookup touches neither store nor source."""

    def __init__(
        self,
        location: AllowlistLocation,
        *,
        store: StateStore,
        ttl: float,
        fetch_contents: FetchContents | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(location, GitHubBlobLocation) and fetch_contents is None:
            raise ValueError("a GitHub blob source needs fetch_contents (the GitHub client)")
        self.location = location
        self.ttl = max(float(ttl), float(ttl_floor(location)))
        self._store = store
        self._fetch_contents = fetch_contents
        self._http = http
        self._owns_http = http is None
        self._timeout = timeout
        self._clock = clock
        self._loaded: _Loaded | None = None
        self._fresh_until = 0.0
        self._refreshing: asyncio.Future[Allowlist] | None = None
        self._cache_key = hashlib.sha256(repr(location).encode()).hexdigest()[:32]

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        store: StateStore,
        *,
        fetch_contents: FetchContents | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> AllowlistSource:
        """Build the source `CRCR_ALLOWLIST` names, with its TTL floored per SPEC §2."""
        if not settings.allowlist:
            raise SettingsError("CRCR_ALLOWLIST: is not set")
        try:
            location = parse_location(settings.allowlist, github_hosts=_github_hosts(settings))
        except ValueError as exc:
            raise SettingsError(f"CRCR_ALLOWLIST: {exc}") from None
        if isinstance(location, GitHubBlobLocation) and fetch_contents is None:
            raise SettingsError(
                "CRCR_ALLOWLIST: a GitHub blob URL is read through the contents API, which"
                " needs the GitHub App (CRCR_GITHUB_APP_ID, CRCR_GITHUB_APP_PRIVATE_KEY)"
            )
        return cls(
            location,
            store=store,
            ttl=settings.allowlist_ttl,
            fetch_contents=fetch_contents,
            http=http,
            timeout=settings.github_timeout,
        )

    def current(self) -> Allowlist | None:
        """The allowlist in force without any I/O, even if stale; None before the first load."""
        return self._loaded.allowlist if self._loaded else None

    async def get(self) -> Allowlist:
        """The allowlist in force, refreshed when its TTL has run out."""
        if self._loaded is not None and self._clock() < self._fresh_until:
            return self._loaded.allowlist
        return await self._coalesced(force=False)

    async def refresh(self) -> Allowlist:
        """Fetch from the source now, whatever the TTL says (the last good one on failure)."""
        return await self._coalesced(force=True)

    async def aclose(self) -> None:
        """Close the HTTP client if this source created it."""
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _coalesced(self, *, force: bool) -> Allowlist:
        # Concurrent callers share one refresh; a caller that is cancelled does not cancel
        # it for the others.
        if self._refreshing is None:
            task = asyncio.ensure_future(self._reload(force=force))
            self._refreshing = task
            task.add_done_callback(self._refresh_done)
        return await asyncio.shield(self._refreshing)

    def _refresh_done(self, task: asyncio.Future[Allowlist]) -> None:
        self._refreshing = None
        if not task.cancelled():
            task.exception()  # retrieved here so an unawaited failure is not reported twice

    async def _reload(self, *, force: bool) -> Allowlist:
        now = self._clock()
        shared = await self._read_shared()
        if not force and shared is not None and now < shared.fetched_at + self.ttl:
            RELOADS.labels(source="shared").inc()
            return self._install(shared, fresh_until=shared.fetched_at + self.ttl)
        try:
            raw = await self._fetch()
            allowlist = parse_allowlist(raw)
        except AllowlistFetchError as exc:
            return self._fall_back("fetch", str(exc), shared, now)
        except AllowlistError as exc:
            return self._fall_back("invalid", str(exc), shared, now)
        loaded = _Loaded(allowlist, raw.decode("utf-8"), now)
        RELOADS.labels(source=_source_label(self.location)).inc()
        await self._write_shared(loaded)
        return self._install(loaded, fresh_until=now + self.ttl)

    def _install(self, loaded: _Loaded, *, fresh_until: float) -> Allowlist:
        previous = self._loaded
        if previous is None or previous.text != loaded.text:
            counts = ", ".join(
                f"{level} {len(loaded.allowlist.repos_at(level))}" for level in Level
            )
            logger.info(
                "allowlist from %s in force: %s repos (%s)",
                self.location,
                len(loaded.allowlist),
                counts,
            )
        self._loaded = loaded
        self._fresh_until = fresh_until
        LAST_SUCCESS.set(loaded.fetched_at)
        return loaded.allowlist

    def _fall_back(self, reason: str, detail: str, shared: _Loaded | None, now: float) -> Allowlist:
        REFRESH_FAILURES.labels(reason=reason).inc()
        candidates = [c for c in (self._loaded, shared) if c is not None]
        if not candidates:
            logger.error(
                "allowlist from %s unavailable and none loaded before: %s", self.location, detail
            )
            raise AllowlistUnavailable(
                f"no valid allowlist has been loaded and {self.location} failed: {detail}"
            )
        last_good = max(candidates, key=lambda c: c.fetched_at)
        logger.warning(
            "allowlist refresh from %s failed (%s): %s; keeping the one fetched at %s",
            self.location,
            reason,
            detail,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last_good.fetched_at)),
        )
        return self._install(last_good, fresh_until=now + min(self.ttl, RETRY_AFTER_FAILURE))

    async def _read_shared(self) -> _Loaded | None:
        try:
            stored = await self._store.cache_get(CACHE_NAMESPACE, self._cache_key)
        except StateStoreUnavailable as exc:
            REFRESH_FAILURES.labels(reason="store").inc()
            logger.warning("allowlist cache unreadable, asking the source: %s", exc)
            return None
        if stored is None:
            return None
        try:
            record = json.loads(stored)
            text, fetched_at = str(record["text"]), float(record["fetched_at"])
            known = self._loaded
            allowlist = known.allowlist if known and known.text == text else parse_allowlist(text)
            return _Loaded(allowlist, text, fetched_at)
        except (ValueError, KeyError, TypeError) as exc:  # AllowlistError is a ValueError
            logger.warning("ignoring an unusable shared allowlist copy: %s", exc)
            return None

    async def _write_shared(self, loaded: _Loaded) -> None:
        record = json.dumps({"text": loaded.text, "fetched_at": loaded.fetched_at})
        try:
            await self._store.cache_set(
                CACHE_NAMESPACE, self._cache_key, record, LAST_GOOD_RETENTION
            )
        except StateStoreUnavailable as exc:
            REFRESH_FAILURES.labels(reason="store").inc()
            logger.warning("allowlist cache unwritable; other instances fetch their own: %s", exc)

    async def _fetch(self) -> bytes:
        location = self.location
        if isinstance(location, FileLocation):
            return await asyncio.to_thread(_read_file, location.path)
        if isinstance(location, UrlLocation):
            return await self._fetch_url(location)
        assert self._fetch_contents is not None  # checked in __init__
        try:
            data = await self._fetch_contents(location.repo, location.path, location.ref)
        except GitHubError as exc:
            raise AllowlistFetchError(str(exc)) from None
        return _bounded(data, str(location))

    async def _fetch_url(self, location: UrlLocation) -> bytes:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._timeout, follow_redirects=True)
        chunks: list[bytes] = []
        size = 0
        try:
            async with self._http.stream("GET", location.url) as response:
                if response.status_code != 200:
                    raise AllowlistFetchError(f"HTTP {response.status_code} from {location}")
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_ALLOWLIST_BYTES:
                        raise AllowlistFetchError(_too_big(str(location)))
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise AllowlistFetchError(f"{type(exc).__name__} from {location}") from None
        return b"".join(chunks)


def _source_label(location: AllowlistLocation) -> str:
    """The closed `source` label of a fetch (never the path or URL: unbounded)."""
    if isinstance(location, FileLocation):
        return "file"
    if isinstance(location, UrlLocation):
        return "url"
    return "github"


def _read_file(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            return _bounded(file.read(MAX_ALLOWLIST_BYTES + 1), str(path))
    except OSError as exc:
        raise AllowlistFetchError(f"cannot read {path}: {exc.strerror or exc}") from None


def _bounded(data: bytes, where: str) -> bytes:
    if len(data) > MAX_ALLOWLIST_BYTES:
        raise AllowlistFetchError(_too_big(where))
    return data


def _too_big(where: str) -> str:
    return f"{where} is larger than {MAX_ALLOWLIST_BYTES} bytes"


def _github_hosts(settings: Settings) -> frozenset[str]:
    """github.com, plus the web host of a GitHub Enterprise Server API (`https://HOST/api/v3`)."""
    hosts = {"github.com"}
    api = httpx.URL(settings.github_api_url)
    if api.path.rstrip("/") == "/api/v3" and api.host:
        hosts.add(api.host.lower())
    return frozenset(hosts)
