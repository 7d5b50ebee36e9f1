"""The HUD as the page tests run it: composed like `crcr hud serve`, served by uvicorn."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from datetime import datetime

import uvicorn
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import Engine

from crcr.hud.component import Hud, mount_hud
from crcr.hud.ingest import HudIngestor
from crcr.hud.queries import HudQueries
from crcr.hud.web import pages_router
from crcr.security_headers import SecurityHeaders

TOKEN = "test-hud-token"


def hud_app(engine: Engine, clock: Callable[[], datetime], *, per_page: int = 25) -> FastAPI:
    """The ingestion API and the pages over one results store, mounted the way
    `crcr.hud.component.create_hud_app` does, with the ingestor on a test clock."""
    app = FastAPI()
    app.add_middleware(SecurityHeaders)
    app.state.hud = Hud(
        engine=engine,
        ingestor=HudIngestor(engine, clock=clock),
        queries=HudQueries(engine),
        token=SecretStr(TOKEN),
        retention_days=90,
    )
    mount_hud(app)
    app.include_router(
        pages_router(
            lambda: app.state.hud.queries, upstream_repo="pytorch/pytorch", per_page=per_page
        )
    )
    return app


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
