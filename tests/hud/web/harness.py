"""The HUD as the page tests run it: composed like `crcr hud serve`, served by uvicorn."""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI
from playwright.sync_api import Page
from pydantic import SecretStr
from sqlalchemy import Engine
from tests.hud.web import seed
from tests.hud.web.seed import Clock

from crcr.hud.component import Hud, mount_hud
from crcr.hud.db import create_results_engine, migrate
from crcr.hud.health.memo import HealthMemo
from crcr.hud.levels.providers import DemotionLookup, GovernanceLookup
from crcr.hud.queries import HudQueries
from crcr.hud.web import pages_router
from crcr.hud.web.budget_view import BudgetLookup
from crcr.hud.web.pages.site import CulpritsSource
from crcr.hud.write.ingest import HudIngestor
from crcr.web.http_wire import add_wire_middleware
from crcr.web.security_headers import SecurityHeaders

TOKEN = "test-hud-token"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

Seeder = Callable[[httpx.Client, str, Clock], None]


def hud_app(
    engine: Engine,
    clock: Callable[[], datetime],
    *,
    per_page: int = 25,
    demotion_lookup: DemotionLookup | None = None,
    governance_lookup: GovernanceLookup | None = None,
    live_seconds: float = 15.0,
    health: HealthMemo | None = None,
    culprits: CulpritsSource | None = None,
    budgets: BudgetLookup | None = None,
) -> FastAPI:
    """The ingestion API and the pages over one results store, mounted the way
    `crcr.hud.component.create_hud_app` does, with the ingestor on a test clock."""
    app = FastAPI()
    app.add_middleware(SecurityHeaders)
    add_wire_middleware(app)
    app.state.hud = Hud(
        engine=engine,
        ingestor=HudIngestor(engine, clock=clock),
        queries=HudQueries(engine),
        token=SecretStr(TOKEN),
        retention_days=90,
    )
    app.state.hud.levels.demotion_lookup = demotion_lookup
    app.state.hud.levels.governance_lookup = governance_lookup
    mount_hud(app)
    app.include_router(
        pages_router(
            lambda: app.state.hud.queries,
            levels=lambda: app.state.hud.levels,
            health=None if health is None else lambda: health,
            culprits=culprits,
            budgets=None if budgets is None else lambda: budgets,
            upstream_repo="pytorch/pytorch",
            per_page=per_page,
            live_seconds=live_seconds,
        )
    )
    return app


@asynccontextmanager
async def asgi_client(
    database: Path, results: Iterable[seed.Result] = seed.RESULTS
) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of the HUD on a new SQLite file holding `results`."""
    engine = create_results_engine(f"sqlite:///{database}")
    migrate(engine)
    transport = httpx.ASGITransport(app=hud_app(engine, Clock()))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:
            for result in results:
                body = seed.result_body(result, Clock().now)
                headers = {"x-hud-internal-bot": TOKEN}
                posted = await http.post("/api/crcr/results", json=body, headers=headers)
                assert posted.status_code == 200, posted.text
            yield http
    finally:
        engine.dispose()


class LiveServer:
    """uvicorn serving an app on a socket bound (and listening) before the thread starts.

    Because the socket already listens, a client can connect at once: the kernel queues
    the connection until uvicorn accepts it, so nothing has to sleep while it starts.
    """

    def __init__(self, app: FastAPI) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        host, port = self.socket.getsockname()
        self.url = f"http://{host}:{port}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def __enter__(self) -> LiveServer:
        self.thread.start()
        # The first answer proves the server is up (it waits in the backlog until then).
        with socket.create_connection(self.socket.getsockname(), timeout=30) as probe:
            probe.sendall(b"GET /crcr/static/hud.css HTTP/1.0\r\n\r\n")
            assert probe.recv(12).startswith(b"HTTP/1.1 200")
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.socket.close()


@contextmanager
def seeded_hud(
    database: Path,
    seed: Seeder,
    *,
    demotion_lookup: DemotionLookup | None = None,
    governance_lookup: GovernanceLookup | None = None,
    health: HealthMemo | None = None,
    culprits: CulpritsSource | None = None,
    budgets: BudgetLookup | None = None,
) -> Iterator[str]:
    """A live HUD on a new SQLite file, seeded over its real ingestion API; yields its URL."""
    engine = create_results_engine(f"sqlite:///{database}")
    migrate(engine)
    clock = Clock()
    try:
        app = hud_app(
            engine,
            clock,
            demotion_lookup=demotion_lookup,
            governance_lookup=governance_lookup,
            health=health,
            culprits=culprits,
            budgets=budgets,
        )
        with LiveServer(app) as server:
            with httpx.Client(base_url=server.url) as client:
                seed(client, TOKEN, clock)
            yield server.url
    finally:
        engine.dispose()


def snapshot(page: Page, artifacts: Path, name: str) -> None:
    """Save the page at desktop and phone width, and check the phone layout fits."""
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(artifacts / f"{name}-desktop.png"), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(artifacts / f"{name}-phone.png"), full_page=True)
    # Wide tables scroll inside their panel; the page itself never scrolls sideways.
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name} is {overflow}px wider than a phone screen"
    page.set_viewport_size(DESKTOP)
