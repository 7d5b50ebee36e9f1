"""A wire over an httpx transport hands the retry loop the same answers as aiohttp's."""

from __future__ import annotations

import gzip
import json

import httpx

from crcr.github.wire import HttpxWire


async def test_a_gzipped_answer_is_read_once_and_turned_back_into_a_response() -> None:
    seen: list[httpx.Request] = []

    def github(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = gzip.compress(json.dumps({"message": "Bad event_type"}).encode())
        headers = {"content-encoding": "gzip", "Link": '<https://api/next>; rel="next"'}
        return httpx.Response(422, headers=headers, content=body)

    wire = HttpxWire(httpx.MockTransport(github), deadline=5)
    answer = await wire.send("POST", "https://api/repos/o/r/dispatches", {"x-a": "1"}, b"{}")
    response = answer.response("POST", "https://api/repos/o/r/dispatches")

    assert answer.status_code == 422
    assert "content-encoding" not in answer.headers  # the body below is decoded already
    assert response.json() == {"message": "Bad event_type"}
    assert response.links["next"]["url"] == "https://api/next"
    assert (seen[0].headers["x-a"], seen[0].content) == ("1", b"{}")
