"""A completed callback's main line: the hand-offs from the HTTP edge to the HUD row.

Traced, not read: every call made while the relay takes one `completed` callback into
the HUD in this process is recorded with the relay and HUD modules on its stack. The
main line is the deepest such stack, the one that writes the row; checks, builders and
parsers are steps that return to the station that called them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from sqlalchemy import Engine
from tests.relay.callback.test_hud import engine, issuer, opener, relay, rows, signing_key
from tests.relay.callback_harness import Relay, callback_body

__all__ = ["engine", "issuer", "opener", "relay", "signing_key"]  # the fixtures, re-used

DOMAIN = ("crcr/relay/", "crcr/hud/")
MAIN_LINE = (
    "relay/callback/endpoint",
    "relay/callback/accept",
    "relay/results/forwarder",
    "hud/write/ingest",
    "hud/write/writer",
)


def _module(frame: FrameType) -> str | None:
    path = frame.f_code.co_filename
    for root in DOMAIN:
        if root in path:
            return path.split("/crcr/", 1)[1].removesuffix(".py")
    return None


@contextmanager
def stacks() -> Iterator[set[tuple[str, ...]]]:
    """The relay and HUD modules on the stack of every call, outermost first."""
    seen: set[tuple[str, ...]] = set()

    def on_event(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or _module(frame) is None:
            return
        chain: list[str] = []
        at: FrameType | None = frame
        while at is not None:
            module = _module(at)
            if module is not None and (not chain or chain[-1] != module):
                chain.append(module)
            at = at.f_back
        seen.add(tuple(reversed(chain)))

    sys.setprofile(on_event)
    try:
        yield seen
    finally:
        sys.setprofile(None)


async def test_a_completed_callback_crosses_five_modules_and_never_comes_back(
    relay: Relay, engine: Engine
) -> None:
    await relay.dispatch("d-1")
    await relay.post(callback_body("d-1"))

    with stacks() as seen:
        response = await relay.post(callback_body("d-1", "completed", "failure"))

    assert response.json() == {"status": "accepted"}
    assert [row["conclusion"] for row in rows(engine)] == ["failure"]
    # The edge hands the callback to the HUD's ingestion; its batch writer (a task of
    # its own, so a stack of its own) writes the row.
    to_the_hud = max((s for s in seen if s[0] == MAIN_LINE[0]), key=len_to(MAIN_LINE[3]))
    writing = max((s for s in seen if s[0] == MAIN_LINE[3]), key=len_to(MAIN_LINE[4]))
    line = to_the_hud[: to_the_hud.index(MAIN_LINE[3])] + writing[: writing.index(MAIN_LINE[4]) + 1]
    assert line == MAIN_LINE  # five modules: the issue asks for six at most
    # Never back to a module it left: no stack holds a module twice.
    assert [s for s in seen if len(set(s)) != len(s)] == []


def len_to(module: str) -> Any:
    """Rank stacks by whether they reach `module`, so `max` finds one that does."""
    return lambda stack: module in stack
