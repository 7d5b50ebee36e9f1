"""A sandbox GitHub, a real SQLite state store, and clients wired to them in-process."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from crcr.github.client import GitHubClient
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

BASE = "http://github.sandbox"


class Clock:
    """A clock shared by the sandbox and the client, moved by hand."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Sleeps:
    """Stands in for `asyncio.sleep` in the retry loop: records each wait, waits no time."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


class CountingStore:
    """The real store, with its cache round trips counted."""

    def __init__(self, inner: StateStore) -> None:
        self.inner = inner
        self.round_trips = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name.startswith("cache_"):
            self.round_trips += 1
        return attribute


ClientFactory = Callable[..., GitHubClient]


@pytest.fixture(scope="session")
def app_identity() -> SandboxApp:
    return SandboxApp.generate(app_id=31337)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def github(app_identity: SandboxApp, clock: Clock) -> SandboxGitHub:
    sandbox = SandboxGitHub(app=app_identity, clock=clock)
    sandbox.install_app("org/backend", "org/other", "org/third")
    sandbox.install_app("elsewhere/repo")
    return sandbox


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[CountingStore]:
    sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
    yield CountingStore(sqlite_store)
    await sqlite_store.close()


@pytest.fixture
async def make_client(
    github: SandboxGitHub, store: CountingStore, clock: Clock, sleeps: Sleeps
) -> AsyncIterator[ClientFactory]:
    """Build clients on the sandbox; `api_prefix` serves it like GitHub Enterprise."""
    clients: list[GitHubClient] = []

    def build(*, api_prefix: str = "", **options: Any) -> GitHubClient:
        app = create_sandbox_app(github, api_prefix=api_prefix)
        options.setdefault("store", store)
        options.setdefault("transport", httpx.ASGITransport(app=app))
        options.setdefault("clock", clock)
        options.setdefault("sleep", sleeps)
        client = GitHubClient(
            BASE + api_prefix,
            github.app.app_id,
            github.app.private_key_pem,
            options.pop("store"),
            **options,
        )
        clients.append(client)
        return client

    yield build
    for client in clients:
        await client.aclose()


@pytest.fixture
def client(make_client: ClientFactory) -> GitHubClient:
    return make_client()
