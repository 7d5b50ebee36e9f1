"""The access log: one structured line per request, probes and scrapes only at DEBUG."""

from __future__ import annotations

import logging

import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from crcr.app import RelayApp
from crcr.config.logging_setup import ACCESS_LOGGER
from crcr.web.access_log import AccessLog, carry_on_request_line


async def teapot(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("short and stout", status_code=418)(scope, receive, send)


async def get(app: object, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 5555))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://relay") as client:
        return await client.get(path, params={"q": "x"})


async def test_a_request_is_one_line_with_method_path_status_duration_and_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)

    await get(AccessLog(teapot), "/crcr/backend")

    (record,) = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    fields = {k: getattr(record, k) for k in ("method", "path", "status", "client")}
    assert fields == {
        "method": "GET",
        "path": "/crcr/backend",
        "status": 418,
        "client": "203.0.113.7:5555",
    }
    assert isinstance(record.duration_ms, float) and record.duration_ms >= 0
    assert record.levelno == logging.INFO


@pytest.mark.parametrize("path", ["/metrics", "/healthz", "/readyz"])
async def test_probes_and_scrapes_stay_out_of_the_info_log(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    await get(AccessLog(teapot), path)
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]

    caplog.set_level(logging.DEBUG, logger=ACCESS_LOGGER)
    await get(AccessLog(teapot), path)
    assert [r.levelno for r in caplog.records if r.name == ACCESS_LOGGER] == [logging.DEBUG]


async def test_an_app_that_raises_is_logged_as_a_500(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    with pytest.raises(RuntimeError):
        await AccessLog(broken)({"type": "http", "method": "GET", "path": "/x"}, None, None)  # type: ignore[arg-type]

    assert [r.status for r in caplog.records if r.name == ACCESS_LOGGER] == [500]


async def test_the_relay_app_logs_its_express_routes_too(caplog: pytest.LogCaptureFixture) -> None:
    app = RelayApp()
    app.express_routes["/hot"] = teapot
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://relay") as client:
        await client.post("/hot")

    assert [(r.method, r.path, r.status) for r in caplog.records if r.name == ACCESS_LOGGER] == [
        ("POST", "/hot", 418)
    ]


async def test_a_handler_can_put_its_decision_on_the_request_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    carried: list[bool] = []

    async def refusing(scope: Scope, receive: Receive, send: Send) -> None:
        carried.append(carry_on_request_line(logging.WARNING, "callback refused", {"why": "no"}))
        await teapot(scope, receive, send)

    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    await get(AccessLog(refusing), "/github/callback")

    (record,) = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert carried == [True]
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith("GET /github/callback 418 ")
    assert record.getMessage().endswith(" ms callback refused")
    assert record.__dict__["why"] == "no" and record.__dict__["status"] == 418


async def test_without_an_access_line_the_handler_is_told_to_log_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    carried: list[bool] = []

    async def deciding(scope: Scope, receive: Receive, send: Send) -> None:
        carried.append(carry_on_request_line(logging.INFO, "callback accepted", {}))
        await teapot(scope, receive, send)

    caplog.set_level(logging.WARNING, logger=ACCESS_LOGGER)  # the access log switched off
    await get(AccessLog(deciding), "/github/callback")

    assert carried == [False]
    assert carry_on_request_line(logging.INFO, "outside any request", {}) is False
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]
