"""Over the wire: ETag / 304 on pages and JSON, gzip above the threshold, not below."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from tests.hud.web import seed
from tests.hud.web.harness import TOKEN, asgi_client

from crcr.web.http_wire import GZIP_MINIMUM_BYTES, add_wire_middleware


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The HUD (pages and API) over a seeded SQLite file, with the wire middleware."""
    async with asgi_client(tmp_path / "hud.db", seed.RESULTS[:4]) as http:
        yield http


@pytest.mark.parametrize(
    "path", ["/crcr", "/crcr/acme/gate", "/crcr/pr/101", "/api/crcr/summary", "/api/crcr/pr/101"]
)
async def test_a_matching_etag_is_answered_304_without_a_body(
    client: httpx.AsyncClient, path: str
) -> None:
    first = await client.get(path)
    etag = first.headers["etag"]
    assert first.status_code == 200
    assert first.headers["cache-control"] == "no-cache"

    again = await client.get(path, headers={"if-none-match": etag})
    other = await client.get(path, headers={"if-none-match": 'W/"something-else"'})

    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert other.status_code == 200 and other.content


async def test_the_etag_changes_when_the_data_does(client: httpx.AsyncClient) -> None:
    before = (await client.get("/api/crcr/pr/777")).headers["etag"]
    result = seed.Result("acme/gate", "L4", 777, seed.SHA_101, "build", "success")
    body = seed.result_body(result, seed.Clock().now)
    await client.post("/api/crcr/results", json=body, headers={"x-hud-internal-bot": TOKEN})

    after = await client.get("/api/crcr/pr/777", headers={"if-none-match": before})

    assert after.status_code == 200
    assert after.headers["etag"] != before


async def test_writes_and_errors_carry_no_etag(client: httpx.AsyncClient) -> None:
    missing = await client.get("/crcr/no/such-backend")
    refused = await client.post("/api/crcr/results", json={})

    assert missing.status_code == 404 and "etag" not in missing.headers
    assert refused.status_code == 401 and "etag" not in refused.headers


async def test_pages_and_json_are_gzipped_when_accepted(client: httpx.AsyncClient) -> None:
    plain = await client.get("/crcr", headers={"accept-encoding": "identity"})
    zipped = await client.get("/crcr", headers={"accept-encoding": "gzip"})

    assert "content-encoding" not in plain.headers
    assert zipped.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in zipped.headers["vary"].lower()
    assert zipped.text == plain.text  # httpx decodes it
    assert zipped.headers["etag"] == plain.headers["etag"]
    assert int(zipped.headers["content-length"]) < len(plain.content) / 2


async def test_small_answers_are_not_compressed() -> None:
    app = FastAPI()
    add_wire_middleware(app)

    @app.get("/small")
    async def small() -> PlainTextResponse:
        return PlainTextResponse("x" * (GZIP_MINIMUM_BYTES - 1))

    @app.get("/large")
    async def large() -> PlainTextResponse:
        return PlainTextResponse("x" * (GZIP_MINIMUM_BYTES + 1))

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        small_answer = await http.get("/small", headers={"accept-encoding": "gzip"})
        large_answer = await http.get("/large", headers={"accept-encoding": "gzip"})

    assert "content-encoding" not in small_answer.headers
    assert large_answer.headers["content-encoding"] == "gzip"
    assert large_answer.text == "x" * (GZIP_MINIMUM_BYTES + 1)
