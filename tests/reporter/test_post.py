"""The poster retries what a retry can fix and stops, with the relay's word, on what it cannot."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from crcr.reporter.post import (
    CallbackRefused,
    CallbackUndelivered,
    network_problem,
    post_callback,
    relay_message,
)
from crcr.reporter.retry import RetryPolicy, retry_after_seconds
from crcr.reporter.token import FreshTokens
from crcr.reporter.transport import Answer, NetworkError
from crcr.sandbox.reporter_send import httpx_send

URL = "http://relay.test/github/callback"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJyZXBvc2l0b3J5IjoiaW50ZWwveHB1In0.c2lnbmVk"
BODY = {"event_type": "push", "delivery_id": "d-1", "payload": {}, "workflow": {"status": "x"}}
POLICY = RetryPolicy(attempts=4, first_delay=1.0, jitter=0.0)


async def token() -> str:
    """The token of a job whose retries all finish long before it expires."""
    return TOKEN


@dataclass
class ScriptedRelay:
    """A relay stand-in that answers from a script and remembers what it was sent."""

    script: list[Response]
    received: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)

    async def callback(self, request: Request) -> Response:
        self.received.append(json.loads(await request.body()))
        self.authorizations.append(request.headers.get("authorization", ""))
        return self.script.pop(0)


class FlakyNetwork(httpx.AsyncBaseTransport):
    """Drops the first `failures` requests on the floor, then lets them through."""

    def __init__(self, inner: httpx.AsyncBaseTransport, failures: int) -> None:
        self.inner = inner
        self.failures = failures

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.failures:
            self.failures -= 1
            raise httpx.ConnectTimeout("timed out", request=request)
        return await self.inner.handle_async_request(request)


@dataclass
class FakeTime:
    """A monotonic clock that moves only when the poster sleeps."""

    now: float = 0.0
    slept: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def slept(fake_time: FakeTime) -> list[float]:
    return fake_time.slept


@pytest.fixture
def sleep(fake_time: FakeTime) -> Any:
    return fake_time.sleep


def client_for(relay: ScriptedRelay, *, dropped: int = 0) -> httpx.AsyncClient:
    app = Starlette(routes=[Route("/github/callback", relay.callback, methods=["POST"])])
    return httpx.AsyncClient(transport=FlakyNetwork(httpx.ASGITransport(app=app), dropped))


async def test_a_502_is_retried_with_backoff_until_the_relay_accepts(
    slept: list[float], sleep: Any
) -> None:
    relay = ScriptedRelay(
        [PlainTextResponse("Bad Gateway", status_code=502)] * 2 + [JSONResponse({"ok": True})]
    )
    async with client_for(relay) as client:
        outcome = await post_callback(
            httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep
        )
    assert (outcome.status_code, outcome.verdict, outcome.attempts) == (200, "accepted", 3)
    assert slept == [1.0, 2.0]
    assert relay.received == [BODY] * 3
    assert relay.authorizations == [f"Bearer {TOKEN}"] * 3


async def test_network_errors_and_timeouts_are_retried(slept: list[float], sleep: Any) -> None:
    relay = ScriptedRelay([JSONResponse({"ok": True})])
    async with client_for(relay, dropped=2) as client:
        outcome = await post_callback(
            httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep
        )
    assert outcome.attempts == 3
    assert len(relay.received) == 1


async def test_a_429_waits_as_long_as_retry_after_says(slept: list[float], sleep: Any) -> None:
    relay = ScriptedRelay(
        [
            JSONResponse({"error": "rate limited"}, status_code=429, headers={"Retry-After": "7"}),
            JSONResponse({"ok": True}),
        ]
    )
    async with client_for(relay) as client:
        await post_callback(httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep)
    assert slept == [7.0]


async def test_a_503_waits_as_long_as_retry_after_says(slept: list[float], sleep: Any) -> None:
    # The relay's answer when its state store is down (SPEC §5.3: fail closed).
    down = JSONResponse(
        {"error": "state store unavailable"}, status_code=503, headers={"Retry-After": "30"}
    )
    relay = ScriptedRelay([down, JSONResponse({"ok": True})])
    async with client_for(relay) as client:
        outcome = await post_callback(
            httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep
        )
    assert outcome.attempts == 2
    assert slept == [30.0]


async def test_retry_after_is_capped_for_a_503_as_for_a_429(slept: list[float], sleep: Any) -> None:
    relay = ScriptedRelay(
        [
            Response(status_code=503, headers={"Retry-After": "3600"}),
            Response(status_code=429, headers={"Retry-After": "3600"}),
            Response(status_code=503),  # no Retry-After: the usual backoff
            JSONResponse({"ok": True}),
        ]
    )
    policy = RetryPolicy(attempts=4, first_delay=1.0, jitter=0.0, max_retry_after=120.0)
    async with client_for(relay) as client:
        await post_callback(httpx_send(client), URL, BODY, token, policy=policy, sleep=sleep)
    assert slept == [120.0, 120.0, 4.0]


async def test_retries_that_outlast_a_token_send_a_freshly_minted_one(
    fake_time: FakeTime,
) -> None:
    minted: list[str] = []

    async def mint() -> str:
        minted.append(f"{TOKEN}{len(minted) + 1}")
        return minted[-1]

    busy = {"error": "rate limited"}
    relay = ScriptedRelay(
        [
            JSONResponse(busy, status_code=429, headers={"Retry-After": "100"}),
            JSONResponse(busy, status_code=429, headers={"Retry-After": "100"}),
            JSONResponse({"ok": True}),
        ]
    )
    tokens = FreshTokens(mint, refresh_after=150.0, clock=fake_time.monotonic)
    async with client_for(relay) as client:
        outcome = await post_callback(
            httpx_send(client), URL, BODY, tokens, policy=POLICY, sleep=fake_time.sleep
        )
    assert outcome.attempts == 3
    # Sent at 0 s and 100 s with the first token; at 200 s it was too old for a third.
    assert relay.authorizations == [
        f"Bearer {TOKEN}1",
        f"Bearer {TOKEN}1",
        f"Bearer {TOKEN}2",
    ]


async def test_a_4xx_stops_at_once_with_the_relays_message(sleep: Any) -> None:
    refusal = {"error": "workflow.run_id: required"}
    relay = ScriptedRelay([JSONResponse(refusal, status_code=400)])
    async with client_for(relay) as client:
        with pytest.raises(CallbackRefused) as caught:
            await post_callback(httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep)
    assert str(caught.value) == (
        "relay refused the report with HTTP 400: workflow.run_id: required"
    )
    assert caught.value.status_code == 400
    assert len(relay.received) == 1


async def test_giving_up_says_how_often_and_what_went_wrong_last(sleep: Any) -> None:
    relay = ScriptedRelay([JSONResponse({"detail": "HUD down"}, status_code=503)] * 4)
    async with client_for(relay) as client:
        with pytest.raises(CallbackUndelivered) as caught:
            await post_callback(httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep)
    assert str(caught.value) == "gave up after 4 attempts: HTTP 503: HUD down"


async def test_giving_up_on_the_network_names_the_error_but_never_the_token(
    sleep: Any,
) -> None:
    relay = ScriptedRelay([])
    async with client_for(relay, dropped=4) as client:
        with pytest.raises(CallbackUndelivered) as caught:
            await post_callback(httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep)
    assert str(caught.value) == (
        "gave up after 4 attempts: ConnectTimeout talking to relay.test: timed out"
    )
    assert relay.received == []


def test_a_network_error_that_quotes_the_token_is_blanked() -> None:
    leaky = NetworkError("RemoteProtocolError", f"illegal header value: Bearer {TOKEN}")
    problem = network_problem(leaky, "relay.test", secret=TOKEN)
    assert problem == (
        "RemoteProtocolError talking to relay.test: illegal header value: Bearer [token]"
    )


@pytest.mark.parametrize(
    ("answer", "verdict", "said"),
    [
        (JSONResponse({"status": "duplicate"}), "duplicate", "already had this report"),
        (JSONResponse({"status": "ignored"}), "ignored", "not at level L2 or above"),
        (JSONResponse({"status": "queued"}, status_code=202), "queued", "HUD is catching up"),
        (JSONResponse({"status": "ok"}), "accepted", "relay accepted the report"),
    ],
)
async def test_every_success_says_what_the_relay_made_of_it(
    answer: Response, verdict: str, said: str, sleep: Any
) -> None:
    async with client_for(ScriptedRelay([answer])) as client:
        outcome = await post_callback(
            httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep
        )
    assert outcome.verdict == verdict
    assert said in outcome.describe()
    assert outcome.describe().startswith(f"crcr report: HTTP {answer.status_code}: ")


async def test_a_redirect_is_refused_with_where_to_go_instead(sleep: Any) -> None:
    moved = Response(status_code=308, headers={"location": "https://relay.example/cb"})
    async with client_for(ScriptedRelay([moved])) as client:
        with pytest.raises(CallbackRefused, match=r"redirected to https://relay\.example/cb"):
            await post_callback(httpx_send(client), URL, BODY, token, policy=POLICY, sleep=sleep)


def test_a_relay_message_never_repeats_the_token_and_stays_short() -> None:
    echoed = Answer(401, text=f"bad token {TOKEN} " + "x" * 1000)
    message = relay_message(echoed, secret=TOKEN)
    assert TOKEN not in message
    assert message.startswith("bad token [token] xxx")
    assert len(message) == 300


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"detail": "workflow.run_id: required", "field": "workflow.run_id"},
            "workflow.run_id: required",
        ),
        (
            {"detail": "no dispatch record", "field": "delivery_id"},
            "no dispatch record (field delivery_id)",
        ),
        ({"detail": "boom", "request_id": "r-1"}, "boom (request id r-1)"),
        ({"error": "from an older relay"}, "from an older relay"),
        ({"detail": "new", "error": "old"}, "new"),
    ],
)
def test_the_relays_detail_is_read_first_and_old_error_bodies_still_are(
    body: dict[str, str], said: str
) -> None:
    assert relay_message(Answer(400, text=json.dumps(body)), secret=TOKEN) == said


def test_retry_after_takes_seconds_or_a_date_and_is_capped() -> None:
    now = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
    policy = RetryPolicy(max_retry_after=60.0)
    assert retry_after_seconds("5", policy, now=now) == 5.0
    assert retry_after_seconds("Sat, 01 Jun 2024 12:00:30 GMT", policy, now=now) == 30.0
    assert retry_after_seconds("3600", policy, now=now) == 60.0
    assert retry_after_seconds("soon", policy, now=now) is None
    assert retry_after_seconds(None, policy, now=now) is None
