"""The allowlist in force: fetched from its source, shared through the state store, and
kept at its last good version whenever the source fails or turns invalid (SPEC §3).

Revocation (SPEC §12): the state store holds a version stamp of the allowlist. `get`
compares it with the stamp of the allowlist in hand at most every `STAMP_MEMO` seconds
(one small store read shared by concurrent callers) and re-reads the allowlist when it
moved; `announce_change` moves it (a push touching the file, `crcr allowlist reload`).
The TTL stays the fallback for a source changed without either.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import httpx
from prometheus_client import Counter, Gauge

from crcr.config.settings import Settings, SettingsError
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
from crcr.stores.roles import AllowlistStamp, Caches
from crcr.stores.state import StateStoreUnavailable

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
STAMP_MEMO = 0.5
"""Seconds a read of the shared stamp is trusted: at most two store reads a second per
instance on the callback path, well inside the 5 s revocation goal."""

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


ANNOUNCEMENTS = Counter(
    "crcr_allowlist_announcements",
    "Allowlist changes announced (the stamp moved), by who announced them.",
    ["source"],
)


class AllowlistUnavailable(Exception):
    """No valid allowlist has ever been loaded and the source cannot provide one."""


class AllowlistFetchError(Exception):
    """The source could not be read; the message is safe to log (no credentials)."""


class AllowlistStore(AllowlistStamp, Caches, Protocol):
    """The state store as the allowlist sees it: the revocation stamp, and the shared copy."""


@dataclass(frozen=True)
class _Loaded:
    allowlist: Allowlist
    text: str
    fetched_at: float
    stamp: int = 0


class AllowlistSource:
    """Hands out the current allowlist; a warm lookup touches neither store nor source."""

    def __init__(
        self,
        location: AllowlistLocation,
        *,
        store: AllowlistStore,
        ttl: float,
        fetch_contents: FetchContents | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
        stamp_memo: float = STAMP_MEMO,
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
        self._stamp_memo = stamp_memo
        self._stamp_checked_until = 0.0
        self._stamp_read: asyncio.Future[int | None] | None = None
        self._cache_key = hashlib.sha256(repr(location).encode()).hexdigest()[:32]

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        store: AllowlistStore,
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
        """The allowlist in force: re-read when its stamp moved or its TTL has run out."""
        loaded = self._loaded
        if loaded is not None and self._clock() < self._fresh_until:
            if time.monotonic() < self._stamp_checked_until:
                return loaded.allowlist
            stamp = await self._shared_stamp()
            if stamp is None or stamp == loaded.stamp:
                return loaded.allowlist
            log_stamp = {"stamp": stamp, "previous_stamp": loaded.stamp}
            logger.info("allowlist stamp moved: re-reading the allowlist", extra=log_stamp)
        return await self._coalesced(force=False)

    async def announce_change(self, source: str) -> Allowlist:
        """Move the shared stamp, then re-read the allowlist: every instance follows.

        `source` (`push`, `cli`) says who announced it, for the log and `/metrics`.
        """
        stamp = await self._store.move_allowlist_stamp()
        ANNOUNCEMENTS.labels(source=source).inc()
        logger.info("allowlist change announced by %s", source, extra={"stamp": stamp})
        return await self.refresh()

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

    async def _shared_stamp(self) -> int | None:
        """The stamp in the store (one read shared by concurrent callers); None if unreadable."""
        if self._stamp_read is None:
            self._stamp_read = asyncio.ensure_future(self._read_stamp())
            self._stamp_read.add_done_callback(self._stamp_read_done)
        return await asyncio.shield(self._stamp_read)

    def _stamp_read_done(self, task: asyncio.Future[int | None]) -> None:
        self._stamp_read = None
        if not task.cancelled() and task.exception() is None:
            self._stamp_checked_until = time.monotonic() + self._stamp_memo

    async def _read_stamp(self) -> int | None:
        try:
            return await self._store.allowlist_stamp()
        except StateStoreUnavailable as exc:
            # The callback fails closed on the store a step later; nothing to decide here.
            logger.warning("allowlist stamp unreadable, keeping the allowlist: %s", exc)
            return None

    async def _reload(self, *, force: bool) -> Allowlist:
        now = self._clock()
        # Read before the source: a change announced while we fetch moves it again.
        stamp = await self._read_stamp()
        shared = await self._read_shared()
        current = stamp is None or (shared is not None and shared.stamp >= stamp)
        if not force and shared is not None and current and now < shared.fetched_at + self.ttl:
            RELOADS.labels(source="shared").inc()
            return self._install(shared, fresh_until=shared.fetched_at + self.ttl)
        try:
            raw = await self._fetch()
            allowlist = parse_allowlist(raw)
        except AllowlistFetchError as exc:
            return self._fall_back("fetch", str(exc), shared, now, stamp)
        except AllowlistError as exc:
            return self._fall_back("invalid", str(exc), shared, now, stamp)
        loaded = _Loaded(allowlist, raw.decode("utf-8"), now, stamp or 0)
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
        self._stamp_checked_until = time.monotonic() + self._stamp_memo
        LAST_SUCCESS.set(loaded.fetched_at)
        return loaded.allowlist

    def _fall_back(
        self, reason: str, detail: str, shared: _Loaded | None, now: float, stamp: int | None
    ) -> Allowlist:
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
        # Stamped as seen: the announced change is answered (by the last good allowlist)
        # and is not asked about again on every callback; the retry below still comes.
        last_good = replace(last_good, stamp=max(last_good.stamp, stamp or 0))
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
            return _Loaded(allowlist, text, fetched_at, int(record.get("stamp", 0)))
        except (ValueError, KeyError, TypeError) as exc:  # AllowlistError is a ValueError
            logger.warning("ignoring an unusable shared allowlist copy: %s", exc)
            return None

    async def _write_shared(self, loaded: _Loaded) -> None:
        record = json.dumps(
            {"text": loaded.text, "fetched_at": loaded.fetched_at, "stamp": loaded.stamp}
        )
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
