"""Serve ASGI apps over loopback from a background thread, for tests that block.

A test that runs `crcr report` as a subprocess blocks its own thread while the
child talks to the relay, so the servers need an event loop of their own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from crcr.demo.servers import EmbeddedServer

READY_WITHIN = 30.0  # seconds: the relay opens its stores and HUD while starting


@contextmanager
def served_in_thread(servers: Sequence[EmbeddedServer]) -> Iterator[None]:
    """Start `servers` in order in one background loop; stop them in reverse on exit.

    Returns once every server (and its lifespan start-up) is ready to accept requests.
    """
    ready = threading.Event()
    failure: list[BaseException] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def run() -> None:
        started: list[EmbeddedServer] = []
        try:
            for server in servers:
                await server.start()
                started.append(server)
        except BaseException as exc:
            failure.append(exc)
        ready.set()
        if not failure:
            await stop.wait()
        for server in reversed(started):
            await server.stop()

    thread = threading.Thread(
        target=loop.run_until_complete, args=(run(),), name="served-apps", daemon=True
    )
    thread.start()
    try:
        if not ready.wait(READY_WITHIN):
            raise TimeoutError(f"servers not ready within {READY_WITHIN} s")
        if failure:
            raise RuntimeError("a server failed to start") from failure[0]
        yield
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(READY_WITHIN)
        loop.close()
