"""Deliver SPEC §6 bodies to the HUD: in-process or over HTTP, queueing what fails.

Why a HUD 5xx answers the caller 202: the failure is not the downstream's, and the
body is already in the durable "hud" retry queue, so a retrying reporter would only
create duplicates. A HUD 4xx is passed through: the caller sent something wrong.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import aiohttp
import httpx

from crcr.config.settings import Settings
from crcr.hud.write.report import JobReport
from crcr.relay.jobs.expectation import HudExpectation
from crcr.relay.results.metrics import count_forward
from crcr.stores.keys import encode, encode_bytes
from crcr.stores.roles import RetryQueue
from crcr.web.aiohttp_origin import AiohttpOrigin
from crcr.web.http_pools import KEEPALIVE_SECONDS, ClientPools
from crcr.web.refusal import Refused
from crcr.web.retry_policy import Backoff, retrying
from crcr.web.transport_pools import TransportPools

log = logging.getLogger(__name__)

HUD_QUEUE = "hud"
HUD_TOKEN_HEADER = "x-hud-internal-bot"  # noqa: S105 - a header name, not a secret
# HUD answers that say "try again later" or "the relay is misconfigured", not "the
# caller is wrong": the body is kept for retry rather than bounced to downstream CI.
_RETRYABLE_CLIENT_ERRORS = frozenset({401, 403, 404, 408, 425, 429})
_MESSAGE_LIMIT = 300


class HudUnreachable(Exception):
    """The HUD could not take the body now (5xx, timeout, connection refused)."""


@dataclass(frozen=True)
class HudResponse:
    """The HUD's answer to one body."""

    status_code: int
    message: str = ""


class HudTransport(Protocol):
    """One way of handing a body to the HUD.

    `wants_echoed_payload`: whether the HUD reads the echoed webhook payload. Ours takes
    the upstream facts from `trusted.dispatch`; a HUD reached over HTTP may be PyTorch's,
    which reads them from the payload, so it gets the callback body as received.
    `takes_reports`: whether it stores the typed `JobReport` of a checked callback
    (the HUD in this process) rather than parsing the body again.
    """

    wants_echoed_payload: bool
    takes_reports: bool

    async def send(
        self, body: Mapping[str, Any], *, within: float, report: JobReport | None = None
    ) -> HudResponse:
        """Deliver `body` (or its `report`); raise `HudUnreachable` when the HUD cannot answer."""


class Ingestor(Protocol):
    """The in-process HUD's ingestion entry points (sync or async); both raise `Refused`
    (a 4xx) to refuse, as the HTTP route answers."""

    def ingest(self, body: Mapping[str, Any]) -> Any:
        """Store one §6 body (one queued for retry)."""

    def ingest_report(self, report: JobReport) -> Any:
        """Store the report of a callback checked in this process."""


class InProcessHudTransport:
    """Hand reports (or, from the retry queue, bodies) to the HUD running in this process."""

    wants_echoed_payload = False
    takes_reports = True

    def __init__(self, ingestor: Ingestor) -> None:
        self._ingestor = ingestor

    async def send(
        self, body: Mapping[str, Any], *, within: float, report: JobReport | None = None
    ) -> HudResponse:
        try:
            async with asyncio.timeout(within):
                if report is not None:
                    result = self._ingestor.ingest_report(report)
                else:
                    result = self._ingestor.ingest(body)
                if inspect.isawaitable(result):
                    await result
        except TimeoutError:
            raise HudUnreachable("the HUD did not answer in time") from None
        except Refused as refused:
            return HudResponse(refused.status_code, refused.detail[:_MESSAGE_LIMIT])
        except Exception as exc:
            log.warning("in-process HUD failed: %s", type(exc).__name__)
            raise HudUnreachable(f"the HUD failed: {type(exc).__name__}") from exc
        return HudResponse(200)


HUD_CONNECTIONS = 64
"""Keep-alive connections to a HUD reached over HTTP, per relay process: one per
concurrent callback up to what one worker serves at saturation (bench.hud_http, 64
in flight), so a forward neither waits for a connection nor opens one (a TLS handshake)."""


class HttpHudTransport:
    """POST bodies to `CRCR_HUD_URL` (e.g. PyTorch's HUD), with a short retry.

    The transport owns its connections (`AiohttpOrigin`: aiohttp's client, which cost a
    fifth of httpx's CPU per 26 KB forward over HTTPS; docs/benchmarks.md, "The HTTPS
    forward, alternatives measured"), apart from the relay's shared client. httpx's
    transports (`TransportPools`) or a client lent by a caller (tests: an app in
    process) are used as given.
    """

    wants_echoed_payload = True
    takes_reports = False

    def __init__(
        self,
        url: str,
        token: str | None,
        client: httpx.AsyncClient | ClientPools | TransportPools | AiohttpOrigin,
        *,
        attempts: int = 2,
        retry_delay: float = 0.2,
    ) -> None:
        self._url = url
        self._headers = {"content-type": "application/json"}
        if token:
            self._headers[HUD_TOKEN_HEADER] = token
        self._pools: ClientPools | TransportPools | AiohttpOrigin = (
            client
            if isinstance(client, (ClientPools, TransportPools, AiohttpOrigin))
            else ClientPools([client], owned=False)
        )
        self._attempts = attempts
        self._backoff = Backoff(base=retry_delay)  # no jitter: one retry, a caller waiting

    async def aclose(self) -> None:
        """Close the transport's own connections."""
        await self._pools.aclose()

    async def send(
        self, body: Mapping[str, Any], *, within: float, report: JobReport | None = None
    ) -> HudResponse:
        deadline = time.monotonic() + within
        content = encode_bytes(body)  # orjson: several times faster than httpx's json=

        async def attempt() -> HudResponse:
            remaining = deadline - time.monotonic()
            try:
                # httpx's timeout covers each phase; this one bounds the whole exchange.
                async with asyncio.timeout(remaining):
                    status, text = await self._post(content, remaining)
            except (httpx.TransportError, aiohttp.ClientError, TimeoutError) as exc:
                raise HudUnreachable(f"{type(exc).__name__} talking to the HUD") from None
            if status >= 500:
                raise HudUnreachable(f"the HUD answered HTTP {status}")
            return HudResponse(status, _short(text))

        return await retrying(
            attempt,
            backoff=self._backoff,
            retry_on=HudUnreachable,
            tries=self._attempts,
            deadline=deadline,
        )

    async def _post(self, content: bytes, phase_seconds: float) -> tuple[int, str]:
        """One POST, through the relay's own connections (aiohttp's, or httpx's
        transports) or a client (lent by a caller)."""
        if isinstance(self._pools, (AiohttpOrigin, TransportPools)):
            return await self._pools.post(
                self._url, content, self._headers, phase_seconds=phase_seconds
            )
        response = await self._pools.next().post(
            self._url, content=content, headers=self._headers, timeout=phase_seconds
        )
        return response.status_code, response.text


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text[: _MESSAGE_LIMIT - 1] + "…" if len(text) > _MESSAGE_LIMIT else text


class Delivery(StrEnum):
    """What became of one body."""

    DELIVERED = "delivered"
    REJECTED = "rejected"
    QUEUED = "queued"
    FAILED = "failed"


@dataclass(frozen=True)
class ForwardResult:
    """The delivery result and, for a rejection, the HUD's status and message."""

    delivery: Delivery
    status_code: int = 200
    message: str = ""


def queue_item_id(body: Mapping[str, Any]) -> str:
    """A stable id for a body, so that queueing the same body twice keeps one copy."""
    return hashlib.sha256(encode(body).encode()).hexdigest()[:40]


class HudForwarder:
    """Sends bodies to the HUD; what cannot be delivered now goes to the retry queue."""

    def __init__(self, transport: HudTransport, store: RetryQueue, *, timeout: float) -> None:
        self.wants_echoed_payload = transport.wants_echoed_payload
        self.takes_reports = transport.takes_reports
        self.transport = transport
        self._store = store
        self._timeout = timeout
        self.on_queued: Callable[[], None] | None = None  # the sweeper's `nudge`

    async def aclose(self) -> None:
        """Close the transport's connections, if it holds any."""
        close = getattr(self.transport, "aclose", None)
        if close is not None:
            await close()

    async def try_send(
        self,
        body: Mapping[str, Any],
        *,
        within: float | None = None,
        report: JobReport | None = None,
    ) -> ForwardResult:
        """One delivery attempt (with the transport's short retries), nothing queued."""
        try:
            response = await self.transport.send(
                body, within=within or self._timeout, report=report
            )
        except HudUnreachable as exc:
            return ForwardResult(Delivery.FAILED, 503, str(exc))
        if 200 <= response.status_code < 300:
            return ForwardResult(Delivery.DELIVERED, response.status_code)
        if response.status_code in _RETRYABLE_CLIENT_ERRORS:
            if response.status_code in (401, 403):
                log.error("the HUD refused the relay's credentials; check CRCR_HUD_TOKEN")
            return ForwardResult(Delivery.FAILED, response.status_code, response.message)
        if 400 <= response.status_code < 500:
            return ForwardResult(Delivery.REJECTED, response.status_code, response.message)
        return ForwardResult(Delivery.FAILED, response.status_code, response.message)

    async def forward(
        self,
        body: Mapping[str, Any],
        *,
        report: JobReport | None = None,
        expect: HudExpectation | None = None,
        budget: float | None = None,
    ) -> ForwardResult:
        """Deliver now, or queue for the sweeper; `expect` is kept with the queued item.

        `report` is the body's typed row, for a transport that `takes_reports`; the
        queue keeps the body. `expect` is the job state the body stands for: a queued
        in_progress must not overwrite a completed row that overtook it (`retry`).
        """
        result = await self.try_send(body, within=budget, report=report)
        if result.delivery is not Delivery.FAILED:
            count_forward(str(result.delivery))
            return result
        await self.enqueue(body, expect=expect)
        log.warning("HUD write queued for retry: %s", result.message or result.status_code)
        count_forward("queued")
        return ForwardResult(Delivery.QUEUED, 202, result.message)

    async def enqueue(
        self,
        body: Mapping[str, Any],
        *,
        expect: HudExpectation | None = None,
        item_id: str | None = None,
    ) -> bool:
        """Put a body in the durable retry queue; False if it is queued already."""
        payload = {"body": dict(body), "expect": expect.to_store() if expect else None}
        queued = await self._store.enqueue(HUD_QUEUE, item_id or queue_item_id(body), payload)
        if self.on_queued is not None:
            self.on_queued()
        return queued


def forwarder_from_settings(
    settings: Settings,
    store: RetryQueue,
    *,
    http: httpx.AsyncClient | None = None,
    ingestor: Ingestor | None = None,
) -> HudForwarder:
    """Forward over HTTP when `CRCR_HUD_URL` is set, else to the in-process HUD.

    Over HTTP the forwarder gets connections of its own unless `http` is lent (tests);
    `HudForwarder.aclose` closes them.
    """
    if settings.hud_url:
        token = settings.hud_token.get_secret_value() if settings.hud_token else None
        pools = http or AiohttpOrigin(HUD_CONNECTIONS, keepalive_seconds=KEEPALIVE_SECONDS)
        transport: HudTransport = HttpHudTransport(settings.hud_url, token, pools)
    elif ingestor is not None:
        transport = InProcessHudTransport(ingestor)
    else:
        raise ValueError("no HUD: set CRCR_HUD_URL or pass the in-process HUD's ingestor")
    return HudForwarder(transport, store, timeout=settings.hud_timeout)
