"""Static assets (versioned, immutable), the favicon, page titles and descriptions, and
the find route without JavaScript: redirect on one match, a list, or a helpful 404."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from tests.hud.web import seed
from tests.hud.web.harness import asgi_client


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The HUD over a SQLite file holding the seeded results."""
    async with asgi_client(tmp_path / "hud.db", seed.RESULTS) as http:
        yield http


async def test_versioned_assets_are_immutable_and_others_revalidate(
    client: httpx.AsyncClient,
) -> None:
    page = (await client.get("/crcr")).text
    urls = re.findall(r'(?:href|src)="(/crcr/static/[\w.]+\?v=[0-9a-f]{12})"', page)
    assert {url.split("?")[0].rsplit("/", 1)[1] for url in urls} == {
        "hud.css",
        "theme.js",
        "live.js",
        "favicon.svg",
    }
    for url in urls:
        answer = await client.get(url)
        assert answer.status_code == 200
        assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
    stale = await client.get("/crcr/static/live.js?v=000000000000")
    assert stale.headers["cache-control"] == "no-cache"
    assert (await client.get("/crcr/static/secrets.py")).status_code == 404


async def test_the_favicon_is_an_icon(client: httpx.AsyncClient) -> None:
    icon = await client.get("/favicon.ico")

    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"  # the ICO header


async def test_every_page_has_its_own_title_and_a_description(client: httpx.AsyncClient) -> None:
    paths = ["/crcr", "/crcr/levels", "/crcr/metrics", "/crcr/nightly", "/crcr/acme/gate"]
    titles = set()
    for path in [*paths, "/crcr/pr/101", "/crcr/find?q=zzz-nothing"]:
        html = (await client.get(path)).text
        title = re.search(r"<title>(.*?)</title>", html)
        description = re.search(r'<meta name="description" content="([^"]+)">', html)
        assert title is not None and description is not None, path
        assert len(description.group(1)) > 40, path
        titles.add(title.group(1))
    assert len(titles) == 7


async def test_one_match_redirects_to_it(client: httpx.AsyncClient) -> None:
    for query, target in [
        ("#101", "/crcr/pr/101"),
        (seed.SHA_101[:7], "/crcr/pr/101"),
        ("acme/gate", "/crcr/acme/gate"),
        ("flaky", "/crcr/acme/flaky"),
    ]:
        answer = await client.get("/crcr/find", params={"q": query})
        assert answer.status_code == 303, query
        assert answer.headers["location"] == target


async def test_several_matches_are_listed_as_links(client: httpx.AsyncClient) -> None:
    answer = await client.get("/crcr/find", params={"q": "acme"})

    assert answer.status_code == 200
    assert 'href="/crcr/acme/gate"' in answer.text and 'href="/crcr/acme/flaky"' in answer.text


async def test_no_match_is_a_404_that_says_so_and_keeps_the_query(
    client: httpx.AsyncClient,
) -> None:
    answer = await client.get("/crcr/find", params={"q": "<no-such>"})

    assert answer.status_code == 404
    assert "Nothing matches “&lt;no-such&gt;”" in answer.text
    assert 'value="&lt;no-such&gt;"' in answer.text
    assert "What the box takes" in answer.text


async def test_an_empty_query_is_a_400_that_explains_the_box(client: httpx.AsyncClient) -> None:
    answer = await client.get("/crcr/find", params={"q": "  "})

    assert answer.status_code == 400
    assert "What the box takes" in answer.text
