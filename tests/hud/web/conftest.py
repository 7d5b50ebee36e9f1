"""A live HUD for the browser tests: seeded SQLite file, real uvicorn, real Chromium."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from tests.hud.web import seed

from crcr.hud.db import create_results_engine, migrate
from crcr.hud.queries import HudQueries
from crcr.hud.web import pages_router

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "hud"


def require_chromium() -> None:
    """Skip (locally) or fail (in CI) when Chromium is not installed."""
    if CHROMIUM.exists():
        return
    reason = f"Chromium is not installed at {CHROMIUM}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI requires it)")
    pytest.skip(reason)


class LiveServer:
    """uvicorn serving an app on a socket bound (and listening) before the thread starts.

    Because the socket already listens, a client can connect at once: the kernel queues
    the connection until uvicorn accepts it, so nothing has to wait for start-up.
    """

    def __init__(self, app: FastAPI) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        host, port = self.socket.getsockname()
        self.url = f"http://{host}:{port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self) -> LiveServer:
        self.thread.start()
        # Wait until the app answers (a condition, not a sleep): connect() succeeds at
        # once on the listening socket; the response proves start-up finished.
        with socket.create_connection(self.socket.getsockname(), timeout=30) as probe:
            probe.sendall(b"GET /crcr/static/hud.css HTTP/1.0\r\n\r\n")
            assert probe.recv(12).startswith(b"HTTP/1.1 200")
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()


@pytest.fixture(scope="module")
def hud_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a HUD whose results store holds `seed.RESULTS`."""
    database = tmp_path_factory.mktemp("hud") / "hud.db"
    engine = create_results_engine(f"sqlite:///{database}")
    migrate(engine)
    seed.seed(engine)
    app = FastAPI()
    app.include_router(pages_router(HudQueries(engine), upstream_repo=seed.UPSTREAM))
    try:
        with LiveServer(app) as server:
            yield server.url
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def artifacts() -> Path:
    """Where screenshots go (git-ignored), for people and CI to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
