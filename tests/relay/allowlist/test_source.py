"""The allowlist source: TTL, sharing through the state store, and last-good fallback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from crcr.config.settings import Settings, SettingsError
from crcr.github.errors import GitHubNotFound
from crcr.relay.allowlist.location import (
    FileLocation,
    GitHubBlobLocation,
    UrlLocation,
    parse_location,
)
from crcr.relay.allowlist.model import Level
from crcr.relay.allowlist.source import (
    MAX_ALLOWLIST_BYTES,
    AllowlistSource,
    AllowlistUnavailable,
)
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

FIXTURES = Path(__file__).parents[2] / "fixtures" / "allowlists"
FIRST = "L2:\n  - org/first\n"
SECOND = "L4:\n  - org/second: oncall1\n"
INVALID = "L2:\n  - not-a-repo\n"


class Clock:
    """A hand-moved wall clock, so TTLs pass without sleeping."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def failures(reason: str) -> float:
    value = REGISTRY.get_sample_value("crcr_allowlist_refresh_failures_total", {"reason": reason})
    return value or 0.0


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StateStore]:
    sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
    yield sqlite_store
    await sqlite_store.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def file_source(path: Path, store: StateStore, clock: Clock, ttl: float = 60) -> AllowlistSource:
    return AllowlistSource(FileLocation(path), store=store, ttl=ttl, clock=clock)


# --- file sources ------------------------------------------------------------------


async def test_a_file_source_loads_the_allowlist(store: StateStore, clock: Clock) -> None:
    source = file_source(FIXTURES / "valid.yaml", store, clock)

    allowlist = await source.get()

    assert allowlist.level_of("pytorch/crcr-test") == Level.L4
    assert source.current() is allowlist


async def test_the_ttl_is_respected(tmp_path: Path, store: StateStore, clock: Clock) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(FIRST)
    source = file_source(path, store, clock, ttl=120)
    await source.get()

    path.write_text(SECOND)
    clock.advance(119)
    assert (await source.get()).level_of("org/first") == Level.L2

    clock.advance(1)
    refreshed = await source.get()
    assert refreshed.level_of("org/second") == Level.L4
    assert refreshed.level_of("org/first") is None


async def test_an_invalid_file_leaves_the_last_good_allowlist_in_force(
    tmp_path: Path, store: StateStore, clock: Clock
) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(FIRST)
    source = file_source(path, store, clock)
    await source.get()
    before = failures("invalid")

    path.write_text(INVALID)
    clock.advance(60)
    kept = await source.get()

    assert kept.level_of("org/first") == Level.L2
    assert failures("invalid") == before + 1

    path.write_text(SECOND)
    clock.advance(60)
    assert (await source.get()).level_of("org/second") == Level.L4


async def test_a_vanished_file_counts_as_a_fetch_failure(
    tmp_path: Path, store: StateStore, clock: Clock
) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(FIRST)
    source = file_source(path, store, clock)
    await source.get()
    before = failures("fetch")

    path.unlink()
    clock.advance(60)

    assert (await source.get()).level_of("org/first") == Level.L2
    assert failures("fetch") == before + 1


async def test_a_source_that_never_worked_raises_a_clear_error(
    tmp_path: Path, store: StateStore, clock: Clock
) -> None:
    source = file_source(tmp_path / "missing.yaml", store, clock)

    with pytest.raises(AllowlistUnavailable, match=r"no valid allowlist .*missing\.yaml"):
        await source.get()


async def test_an_oversized_file_is_refused(
    tmp_path: Path, store: StateStore, clock: Clock
) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("L1:\n" + "  - org/repo\n" * (MAX_ALLOWLIST_BYTES // 10))

    with pytest.raises(AllowlistUnavailable, match="larger than"):
        await file_source(path, store, clock).get()


# --- sharing through the state store --------------------------------------------------


async def test_instances_share_the_allowlist_through_the_store(
    tmp_path: Path, store: StateStore, clock: Clock
) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(FIRST)
    await file_source(path, store, clock).get()

    path.unlink()  # a second instance never needs the source while the shared copy is fresh
    clock.advance(30)
    other = file_source(path, store, clock)

    assert (await other.get()).level_of("org/first") == Level.L2


async def test_a_new_instance_falls_back_on_the_stale_shared_copy(
    tmp_path: Path, store: StateStore, clock: Clock
) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(FIRST)
    await file_source(path, store, clock).get()

    path.write_text(INVALID)
    clock.advance(3600)
    late_instance = file_source(path, store, clock)

    assert (await late_instance.get()).level_of("org/first") == Level.L2


async def test_a_warm_lookup_touches_neither_store_nor_source(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(FIRST)
    sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
    source = file_source(path, sqlite_store, clock)
    first = await source.get()

    await sqlite_store.close()
    path.unlink()

    assert await source.get() is first


async def test_an_unreachable_store_does_not_stop_the_allowlist(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(FIRST)
    unreachable = RedisStateStore.from_url("redis://127.0.0.1:1/0")
    before = failures("store")
    try:
        allowlist = await file_source(path, unreachable, clock).get()
    finally:
        await unreachable.close()

    assert allowlist.level_of("org/first") == Level.L2
    assert failures("store") >= before + 1


async def test_concurrent_refreshes_are_coalesced(store: StateStore, clock: Clock) -> None:
    fetcher = RecordingContents({("pytorch/pytorch", ".github/allowlist.yml", "main"): FIRST})
    gate = asyncio.Event()
    fetcher.gate = gate
    source = blob_source(fetcher, store, clock)

    lookups = [asyncio.create_task(source.get()) for _ in range(20)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*lookups)

    assert len(fetcher.calls) == 1
    assert {id(result) for result in results} == {id(results[0])}


# --- GitHub blob sources ----------------------------------------------------------------


@dataclass
class RecordingContents:
    """A stand-in for the GitHub client's `get_contents`, recording what it was asked."""

    files: dict[tuple[str, str, str], str]
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    gate: asyncio.Event | None = None

    async def __call__(self, repo: str, path: str, ref: str) -> bytes:
        self.calls.append((repo, path, ref))
        if self.gate is not None:
            await self.gate.wait()
        try:
            return self.files[(repo, path, ref)].encode()
        except KeyError:
            raise GitHubNotFound(f"GET /repos/{repo}/contents/{path}", 404, "Not Found") from None


def blob_source(fetcher: RecordingContents, store: StateStore, clock: Clock) -> AllowlistSource:
    location = parse_location("https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml")
    return AllowlistSource(location, store=store, ttl=60, fetch_contents=fetcher, clock=clock)


async def test_a_github_blob_is_read_through_the_contents_api(
    store: StateStore, clock: Clock
) -> None:
    fetcher = RecordingContents({("pytorch/pytorch", ".github/allowlist.yml", "main"): SECOND})
    source = blob_source(fetcher, store, clock)

    assert (await source.get()).level_of("org/second") == Level.L4
    assert fetcher.calls == [("pytorch/pytorch", ".github/allowlist.yml", "main")]
    assert source.ttl == 900  # the GitHub floor, though 60 was asked for


async def test_a_github_failure_keeps_the_last_good_allowlist(
    store: StateStore, clock: Clock
) -> None:
    fetcher = RecordingContents({("pytorch/pytorch", ".github/allowlist.yml", "main"): FIRST})
    source = blob_source(fetcher, store, clock)
    await source.get()
    before = failures("fetch")

    fetcher.files.clear()
    clock.advance(900)
    kept = await source.refresh()

    assert kept.level_of("org/first") == Level.L2
    assert failures("fetch") == before + 1
    assert len(fetcher.calls) == 2


# --- https sources -------------------------------------------------------------------------


@dataclass
class ServedAllowlist:
    body: str = FIRST
    status: int = 200
    requests: int = 0


def https_client(served: ServedAllowlist) -> httpx.AsyncClient:
    async def allowlist(request: Request) -> Response:
        served.requests += 1
        return PlainTextResponse(served.body, status_code=served.status)

    app = Starlette(routes=[Route("/allowlist.yml", allowlist)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


async def test_an_https_source_is_fetched_and_falls_back_on_failure(
    store: StateStore, clock: Clock
) -> None:
    served = ServedAllowlist()
    async with https_client(served) as client:
        source = AllowlistSource(
            UrlLocation("https://allowlists.example/allowlist.yml?token=hunter2"),
            store=store,
            ttl=0,
            http=client,
            clock=clock,
        )
        assert (await source.get()).level_of("org/first") == Level.L2
        assert source.ttl == 60

        served.status = 503
        before = failures("fetch")
        clock.advance(60)
        assert (await source.get()).level_of("org/first") == Level.L2
        assert failures("fetch") == before + 1

        served.status, served.body = 200, SECOND
        clock.advance(60)
        assert (await source.get()).level_of("org/second") == Level.L4
        assert served.requests == 3


async def test_the_url_is_logged_without_its_query(
    store: StateStore, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    served = ServedAllowlist(status=404)
    async with https_client(served) as client:
        source = AllowlistSource(
            UrlLocation("https://user:pw@allowlists.example/allowlist.yml?token=hunter2"),
            store=store,
            ttl=60,
            http=client,
            clock=clock,
        )
        with pytest.raises(AllowlistUnavailable) as caught:
            await source.get()

    assert "HTTP 404 from https://allowlists.example/allowlist.yml" in str(caught.value)
    assert "hunter2" not in caplog.text + str(caught.value)
    assert "pw@" not in caplog.text + str(caught.value)


# --- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/etc/crcr/allowlist.yml", FileLocation(Path("/etc/crcr/allowlist.yml"))),
        ("file:///srv/allow%20list.yml", FileLocation(Path("/srv/allow list.yml"))),
        ("https://example.org/a.yml", UrlLocation("https://example.org/a.yml")),
        ("http://127.0.0.1:8080/a.yml", UrlLocation("http://127.0.0.1:8080/a.yml")),
        (
            "https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml",
            GitHubBlobLocation("pytorch/pytorch", "main", ".github/allowlist.yml"),
        ),
    ],
)
def test_locations_are_classified(text: str, expected: object) -> None:
    assert parse_location(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("http://example.org/a.yml", "must use https://"),
        ("https://github.com/pytorch/pytorch", "must be a blob URL"),
        ("ftp://example.org/a.yml", "unsupported scheme ftp://"),
        ("  ", "is empty"),
    ],
)
def test_bad_locations_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_location(text)


async def test_settings_choose_the_source_and_floor_its_ttl(
    tmp_path: Path, store: StateStore
) -> None:
    file_settings = Settings(allowlist=str(tmp_path / "a.yml"), allowlist_ttl=5)
    assert AllowlistSource.from_settings(file_settings, store).ttl == 60

    ghes = Settings(
        allowlist="https://ghe.example.com/infra/policy/blob/v2/allowlist.yml",
        github_api_url="https://ghe.example.com/api/v3",
        allowlist_ttl=3600,
    )
    source = AllowlistSource.from_settings(ghes, store, fetch_contents=RecordingContents({}))
    assert source.location == GitHubBlobLocation("infra/policy", "v2", "allowlist.yml")
    assert source.ttl == 3600


@pytest.mark.parametrize(
    ("allowlist", "message"),
    [
        (None, "CRCR_ALLOWLIST: is not set"),
        ("https://github.com/o/r/blob/main/a.yml", "CRCR_ALLOWLIST: a GitHub blob URL"),
        ("http://example.org/a.yml", "CRCR_ALLOWLIST: must use https://"),
    ],
)
def test_settings_errors_name_the_variable(
    allowlist: str | None, message: str, store: StateStore
) -> None:
    with pytest.raises(SettingsError, match=message):
        AllowlistSource.from_settings(Settings(allowlist=allowlist), store)
