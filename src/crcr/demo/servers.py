"""Serve ASGI apps from inside the demo's event loop on sockets bound beforehand."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Literal

import uvicorn
from starlette.types import ASGIApp


class ServerFailed(Exception):
    """A server stopped before it was ready (its reason is in the log)."""


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: the demo decides when everything stops."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind and listen now, so that port 0 yields a known URL before any app exists."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(256)
    except OSError:
        sock.close()
        raise
    return sock


def socket_url(sock: socket.socket) -> str:
    """`http://host:port` for a bound socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class EmbeddedServer:
    """One app served by uvicorn as a task of the running loop."""

    def __init__(
        self, app: ASGIApp, sock: socket.socket, *, lifespan: Literal["on", "off"] = "on"
    ) -> None:
        config = uvicorn.Config(
            app, lifespan=lifespan, log_config=None, access_log=False, log_level="warning"
        )
        self.server = _QuietServer(config)
        self.sock = sock
        self.url = socket_url(sock)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start serving and return once the app (and its lifespan start-up) is ready."""
        self._task = asyncio.create_task(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self._task.done():
                raise ServerFailed(f"the server for {self.url} stopped while starting")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Finish open requests, run the app's shutdown, and close the socket."""
        if self._task is not None:
            self.server.should_exit = True
            with contextlib.suppress(Exception):
                await self._task
        self.sock.close()
