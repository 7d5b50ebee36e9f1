"""One pooled HTTP connection to GitHub's REST API, with timeouts, retries and typed errors."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

import httpx

from crcr import __version__
from crcr.github import rate_limit
from crcr.github.aiohttp_transport import AiohttpTransport
from crcr.github.errors import GitHubUnavailable, error_for_status
from crcr.github.retry import RetryPolicy, is_retryable_status, retry_after_seconds
from crcr.web.http_pools import KEEPALIVE_SECONDS
from crcr.web.transport_pools import TransportPools

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
    """Send REST calls through keep-alive httpx transports (`TransportPools`).

    URLs are joined onto `api_url` (so `https://HOST/api/v3` works for GitHub Enterprise).
    Every attempt has its own deadline (`timeout`, enforced around the whole attempt, not
    only per socket read); 5xx, 429, throttling 403s, timeouts and connection errors are
    retried with full-jitter backoff, waiting exactly as long as GitHub asks when it does.
    Requests are built here and sent on the transport directly: httpx's client layers
    were most of a dispatch's CPU in the fan-out's profile, and its connection handling
    most of the rest, so the wire is aiohttp's (`AiohttpTransport`; docs/benchmarks.md,
    issue 34). `transport`, if given, replaces it (tests: an app in process, a mock).
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
        self._timeouts = httpx.Timeout(timeout).as_dict()
        self._pools = TransportPools(
            [
                transport
                or AiohttpTransport(
                    connections=max_connections, keepalive_seconds=KEEPALIVE_SECONDS
                )
            ]
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
        call = f"{method} {httpx.URL(path).path if '://' in path else path}"
        retries = self.policy.max_retries if max_retries is None else max_retries
        headers = dict(self._headers)
        if accept:
            headers["accept"] = accept
        if content is not None:
            headers["content-type"] = "application/json"
        url = path if "://" in path else self._base_url + path.lstrip("/")
        attempt, reauthenticated = 0, False
        while True:
            status: int | None = None
            hint: float | None = None
            headers["authorization"] = await auth()
            try:
                async with asyncio.timeout(self.timeout):
                    response = await self._pools.send(
                        httpx.Request(
                            method,
                            url,
                            headers=headers,
                            json=json,
                            content=content,
                            params=params,
                            extensions={"timeout": self._timeouts},
                        )
                    )
            except (TimeoutError, httpx.TimeoutException):
                message = f"no answer within {self.timeout:g} s"
            except httpx.TransportError as exc:
                message = f"connection failed ({type(exc).__name__})"
            else:
                rate_limit.observe(rate_limit.installation_of(acting_for), response.headers)
                status = response.status_code
                if status < 400:
                    return response
                message = _message(response)
                if status == 401 and refresh_auth is not None and not reauthenticated:
                    # A cached token GitHub no longer honours (revoked, clock skew): get
                    # a fresh one once, without counting it as a retry.
                    reauthenticated = True
                    await refresh_auth()
                    continue
                if not is_retryable_status(status, response.headers):
                    if status in final_ok:
                        return response
                    raise error_for_status(call, status, message)
                hint = retry_after_seconds(response.headers, self._clock())
            if attempt >= retries or (hint is not None and hint > self.policy.max_hinted_wait):
                raise GitHubUnavailable(call, status, message, retry_after=hint)
            wait = self.policy.backoff.delay(attempt, self._rng.random) if hint is None else hint
            await self._sleep(wait)
            attempt += 1

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._pools.aclose()
