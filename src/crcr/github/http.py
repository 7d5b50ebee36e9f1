"""One pooled HTTP connection to GitHub's REST API, with timeouts, retries and typed errors."""

from __future__ import annotations

import asyncio
import json as json_module
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx

from crcr import __version__
from crcr.github import rate_limit
from crcr.github.aiohttp_wire import AiohttpWire
from crcr.github.errors import GitHubUnavailable, error_for_status
from crcr.github.retry import RetryPolicy, is_retryable_status, retry_after_seconds
from crcr.github.wire import HttpxWire, Wire, WireAnswer
from crcr.web.http_pools import KEEPALIVE_SECONDS

API_VERSION = "2022-11-28"
JSON_MEDIA_TYPE = "application/vnd.github+json"

# Credentials for one attempt; `refresh` is called when GitHub answers 401 to them.
AuthProvider = Callable[[], Awaitable[str]]
AuthRefresh = Callable[[], Awaitable[None]]


def _message(response: httpx.Response) -> str:
    """GitHub's error message, or the start of the body when it is not JSON."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, str):
        return message
    return response.reason_phrase


class GitHubHttp:
    """Send REST calls over keep-alive connections (a `Wire`), with one retry loop.

    URLs are joined onto `api_url` (so `https://HOST/api/v3` works for GitHub Enterprise).
    Every attempt has its own deadline (`timeout`, which the wire enforces around the
    whole attempt, not only per socket read); 5xx, 429, throttling 403s, timeouts and
    connection errors are retried with full-jitter backoff, waiting exactly as long as
    GitHub asks when it does.
    The wire is aiohttp's (`AiohttpWire`: httpx's client, its transport and then its
    request/response models were, in turn, most of a dispatch's CPU in the fan-out's
    profile; docs/benchmarks.md, issue 34). `transport`, if given, is sent on instead
    (tests: an app in process, a mock).
    """

    def __init__(
        self,
        api_url: str,
        *,
        timeout: float = 10.0,
        policy: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 128,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.timeout = timeout
        self.policy = policy or RetryPolicy()
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not security
        self._base_url = api_url.rstrip("/") + "/"
        self._headers = {
            "accept": JSON_MEDIA_TYPE,
            "accept-encoding": "gzip, deflate",
            "x-github-api-version": API_VERSION,
            "user-agent": f"crcr/{__version__}",
        }
        self._wire: Wire = (
            HttpxWire(transport, deadline=timeout)
            if transport is not None
            else AiohttpWire(
                connections=max_connections, keepalive_seconds=KEEPALIVE_SECONDS, deadline=timeout
            )
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        auth: AuthProvider,
        refresh_auth: AuthRefresh | None = None,
        json: Any = None,
        content: bytes | None = None,
        params: Mapping[str, str] | None = None,
        accept: str | None = None,
        final_ok: Collection[int] = (),
        max_retries: int | None = None,
        acting_for: str | None = None,
    ) -> httpx.Response:
        """Send one call, retrying what is worth retrying; raise a typed `GitHubError` else.

        `path` is either an API path (`/repos/o/r/dispatches`) or an absolute URL from a
        `Link` header. Statuses in `final_ok` are returned instead of raised (a re-run's
        "already running" 403), unless they are throttling. `acting_for` is the repo whose
        installation token authenticates the call (None: the App's JWT), whose rate limit
        the answer's headers report (crcr.github.rate_limit).
        """
        if json is not None:
            content = json_body(json)
        answer = await self.exchange(
            method,
            path,
            auth=auth,
            refresh_auth=refresh_auth,
            content=content,
            params=params,
            accept=accept,
            final_ok=final_ok,
            max_retries=max_retries,
            acting_for=acting_for,
        )
        return answer.response(method, self._url(path, params))

    async def exchange(
        self,
        method: str,
        path: str,
        *,
        auth: AuthProvider,
        refresh_auth: AuthRefresh | None = None,
        content: bytes | None = None,
        params: Mapping[str, str] | None = None,
        accept: str | None = None,
        final_ok: Collection[int] = (),
        max_retries: int | None = None,
        acting_for: str | None = None,
    ) -> WireAnswer:
        """`request` with a ready body, answering the wire's own `WireAnswer`.

        For calls whose answer is judged by its status alone (a dispatch's 204): no
        httpx model is built unless the call fails.
        """
        call = f"{method} {urlsplit(path).path if '://' in path else path}"
        url = self._url(path, params)
        retries = self.policy.max_retries if max_retries is None else max_retries
        headers = dict(self._headers)
        if accept:
            headers["accept"] = accept
        if content is not None:
            headers["content-type"] = "application/json"
        installation = rate_limit.installation_of(acting_for)
        attempt, reauthenticated = 0, False
        while True:
            status: int | None = None
            hint: float | None = None
            headers["authorization"] = await auth()
            try:
                answer = await self._wire.send(method, url, headers, content)
            except (TimeoutError, httpx.TimeoutException):
                message = f"no answer within {self.timeout:g} s"
            except httpx.TransportError as exc:
                message = f"connection failed ({type(exc).__name__})"
            else:
                rate_limit.observe(installation, answer.headers)
                status = answer.status_code
                if status < 400:
                    return answer
                message = _message(answer.response(method, url))
                if status == 401 and refresh_auth is not None and not reauthenticated:
                    # A cached token GitHub no longer honours (revoked, clock skew): get
                    # a fresh one once, without counting it as a retry.
                    reauthenticated = True
                    await refresh_auth()
                    continue
                if not is_retryable_status(status, answer.headers):
                    if status in final_ok:
                        return answer
                    raise error_for_status(call, status, message)
                hint = retry_after_seconds(answer.headers, self._clock())
            if attempt >= retries or (hint is not None and hint > self.policy.max_hinted_wait):
                raise GitHubUnavailable(call, status, message, retry_after=hint)
            wait = self.policy.backoff.delay(attempt, self._rng.random) if hint is None else hint
            await self._sleep(wait)
            attempt += 1

    def _url(self, path: str, params: Mapping[str, str] | None) -> str:
        """`path` joined onto the API's base (unless it is absolute), `params` appended."""
        url = path if "://" in path else self._base_url + path.lstrip("/")
        if params:
            url += ("&" if urlsplit(url).query else "?") + urlencode(params)
        return url

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._wire.aclose()


def json_body(value: Any) -> bytes:
    """A request body as httpx encodes `json=` (compact, UTF-8, no NaN)."""
    return json_module.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode()
