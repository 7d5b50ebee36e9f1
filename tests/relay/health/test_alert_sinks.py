"""The alert queue's handler: what it makes of each answer, and that no URL leaks to a log."""

from __future__ import annotations

import logging

import httpx
import pytest

from crcr.relay.alerts.sinks import SLACK, WEBHOOK, AlertSinks, alert_queue_handler
from crcr.relay.jobs.queue_handler import HandlerResult
from crcr.stores.values import LeasedItem

HOOK = "https://alerts.example.org/hook?token=sink-token"
BODY = {"kind": "canary", "repo": "org/c", "from": "healthy", "to": "degraded", "at": "x"}


def item(sink: str) -> LeasedItem:
    return LeasedItem("a1:" + sink, {"sink": sink, "alert": BODY}, 1, 0.0, "lease")


def client(answer: int | None) -> httpx.AsyncClient:
    """A far end answering `answer`, or failing to connect when None."""

    def respond(request: httpx.Request) -> httpx.Response:
        if answer is None:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(answer)

    return httpx.AsyncClient(transport=httpx.MockTransport(respond))


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        (204, HandlerResult.DONE),
        (500, HandlerResult.RETRY),
        (429, HandlerResult.RETRY),
        (None, HandlerResult.RETRY),
        (404, HandlerResult.DROP),
    ],
)
async def test_each_answer_has_its_outcome_and_the_url_is_never_logged(
    answer: int | None, result: HandlerResult, caplog: pytest.LogCaptureFixture
) -> None:
    sinks = AlertSinks(HOOK, b"secret", None)
    # crcr's loggers at their most verbose; httpx stays at WARNING, as logging_setup
    # configures every process (its INFO line names the request URL).
    caplog.set_level(logging.DEBUG, logger="crcr")
    async with client(answer) as http:
        assert await alert_queue_handler(sinks, http)(item(WEBHOOK)) is result
    assert "sink-token" not in caplog.text and "secret" not in caplog.text


async def test_a_sink_turned_off_since_is_dropped() -> None:
    async with client(204) as http:
        handled = await alert_queue_handler(AlertSinks(HOOK, None, None), http)(item(SLACK))
    assert handled is HandlerResult.DROP
