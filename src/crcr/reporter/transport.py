"""The reporter's one way onto the network: a `Send` function, the standard library's by default.

The composite action runs the reporter with whatever `python3` the runner has and
installs nothing (SPEC §8), so the reporter cannot use httpx: it talks HTTP through
`urllib`, on a worker thread so that the asyncio retry loop stays as it is. The sandbox's
simulated CI hands in a `Send` of its own (over its httpx client) and so runs the very
same retry, token and verdict code as a runner does.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

MAX_ANSWER_BYTES = 64 * 1024
"""A relay's or token service's answer is a few hundred bytes; more is read no further."""


@dataclass(frozen=True)
class Answer:
    """An HTTP response, whatever its status: status code, headers (lower-case) and text."""

    status_code: int
    text: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body as JSON (raises ValueError when it is not)."""
        return json.loads(self.text)


class NetworkError(Exception):
    """No answer came back (refused, reset, timed out…); `kind` names it, like `ConnectError`."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


Send = Callable[[str, str, Mapping[str, str], Optional[bytes]], Awaitable[Answer]]
"""`send(method, url, headers, body)`: one request, no redirects followed, no retry."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirected callback is a wrong URL to fix, not one to follow with the token."""

    def redirect_request(self, *_: Any) -> None:
        return None


def _answer(status: int, headers: Any, raw: bytes) -> Answer:
    lowered = {name.lower(): value for name, value in headers.items()} if headers else {}
    return Answer(status, raw.decode("utf-8", "replace"), lowered)


def _network_error(exc: BaseException) -> NetworkError:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return NetworkError("Timeout", "no answer in time")
    if isinstance(reason, ConnectionRefusedError):
        return NetworkError("ConnectError", "connection refused")
    if isinstance(reason, OSError) and not isinstance(reason, ConnectionError):
        return NetworkError("ConnectError", str(reason.strerror or reason))
    return NetworkError(type(reason).__name__, str(reason))


class UrllibSend:
    """`Send` over `urllib.request`: each phase (connect, each read) bounded by `timeout`.

    Proxies come from the usual `https_proxy`/`no_proxy` variables, as for any
    command on a runner behind one.
    """

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirects())

    async def __call__(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> Answer:
        return await asyncio.get_running_loop().run_in_executor(
            None, self._blocking, method, url, dict(headers), body
        )

    def _blocking(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> Answer:
        request = urllib.request.Request(url, data=body, headers=headers, method=method)  # noqa: S310 - the URL is checked to be http(s)
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                return _answer(response.status, response.headers, response.read(MAX_ANSWER_BYTES))
        except urllib.error.HTTPError as exc:
            with exc:
                return _answer(exc.code, exc.headers, exc.read(MAX_ANSWER_BYTES))
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            raise _network_error(exc) from None
