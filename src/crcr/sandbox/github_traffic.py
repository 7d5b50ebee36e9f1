"""ASGI middleware that logs every sandbox GitHub call and applies injected faults."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crcr.sandbox.call_log import CallRecord
from crcr.sandbox.github_state import SandboxGitHub

REPO_IN_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)")


def _api_path(scope: Scope) -> str:
    """The path below the API root, e.g. `/repos/o/r` when served under `/api/v3`."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path or "/"


class TrafficMiddleware:
    """Record each call in the call log and shape it by the fault plan."""

    def __init__(self, app: ASGIApp, github: SandboxGitHub) -> None:
        self.app = app
        self.github = github

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api_path = _api_path(scope)
        full_path: str = scope["path"]
        scope = {
            **scope,
            "crcr.api_path": api_path,
            "crcr.api_prefix": full_path[: len(full_path) - len(api_path)],
        }
        body = await _read_body(receive)
        method: str = scope["method"]
        match = REPO_IN_PATH.match(api_path)
        repo = f"{match.group(1)}/{match.group(2)}" if match else None
        decision = self.github.faults.decide(method, api_path, repo)
        status: int | None = None

        pending = [body]

        async def replay() -> Message:
            if pending:
                return {"type": "http.request", "body": pending.pop(), "more_body": False}
            return await receive()

        answer: list[bytes] = []

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                answer.append(message.get("body", b""))
            await send(message)

        try:
            if decision.hang > 0:
                await asyncio.sleep(decision.hang)
            rule = decision.answer
            if rule is not None and rule.status is not None:
                await asyncio.sleep(decision.latency)
                response = JSONResponse(
                    rule.response_body(), status_code=rule.status, headers=rule.response_headers()
                )
                await response(scope, replay, watch)
            elif decision.latency > 0:
                await _answer_after(
                    decision.latency, lambda hold: self.app(scope, replay, hold), watch
                )
            else:
                await self.app(scope, replay, watch)
        finally:
            self.github.call_log.append(
                CallRecord(
                    method=method,
                    path=api_path,
                    query=scope.get("query_string", b"").decode("latin-1"),
                    repo=repo,
                    status=status,
                    body=body,
                    timestamp=self.github.clock(),
                    faulted=decision.answer is not None or decision.delay > 0,
                    headers=_loggable_headers(scope),
                    answer_body=b"".join(answer),
                )
            )


async def _answer_after(
    latency: float, handle: Callable[[Send], Awaitable[None]], send: Send
) -> None:
    """Handle the call at once and hold its answer until `latency` has passed.

    GitHub does a call's work within the time it takes to answer, and serves calls in
    parallel; the sandbox has one event loop. Doing the work after the wait would queue
    every call's work behind the others' waits: 100 dispatches arriving together would
    be answered over the sandbox's whole CPU time for them, not at `latency`.
    """
    loop = asyncio.get_running_loop()
    due = loop.time() + latency
    held: list[Message] = []

    async def hold(message: Message) -> None:
        held.append(message)

    await handle(hold)
    await asyncio.sleep(max(0.0, due - loop.time()))
    for message in held:
        await send(message)


def _loggable_headers(scope: Scope) -> dict[str, str]:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in headers
        if name.lower() != b"authorization"
    }


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
