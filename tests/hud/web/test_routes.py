"""The page routes in process: empty states, bad parameters, pagination, escaping, CSS."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from tests.hud.web import seed
from tests.hud.web.harness import TOKEN, hud_app

from crcr.hud.db import create_results_engine, migrate


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A HUD over an empty SQLite file, one commit per matrix page."""
    engine = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}")
    migrate(engine)
    app = hud_app(engine, seed.Clock(), per_page=1)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:
        yield http
    engine.dispose()


async def post(client: httpx.AsyncClient, result: seed.Result) -> None:
    body = seed.result_body(result, seed.Clock().now)
    response = await client.post(
        "/api/crcr/results", json=body, headers={"x-hud-internal-bot": TOKEN}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/crcr", "No backends yet"),
        ("/crcr/metrics", "No timings yet"),
        ("/crcr/nightly", "No nightly runs reported"),
        ("/crcr/pr/5", "No results for this pull request"),
    ],
)
async def test_an_empty_hud_explains_itself(
    client: httpx.AsyncClient, path: str, message: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert message in response.text
    assert 'class="empty-state"' in response.text


async def test_an_unknown_backend_is_a_404_page(client: httpx.AsyncClient) -> None:
    response = await client.get("/crcr/nobody/nothing")
    assert response.status_code == 404
    assert "No results have been recorded for nobody/nothing" in response.text


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("/crcr?window=3", "window must be one of 1, 7, 14, 30"),
        ("/crcr?window=x", "window must be one of"),
        ("/crcr?event=release", "event must be one of pull_request, push, nightly, periodic"),
        ("/crcr/metrics?window=90", "window must be one of"),
        ("/crcr/nightly?window=0", "window must be one of"),
        ("/crcr/acme/gate?page=0", "page must be a positive whole number"),
        ("/crcr/pr/abc", "PR number must be a positive integer"),
    ],
)
async def test_bad_parameters_get_a_400_naming_the_parameter(
    client: httpx.AsyncClient, path: str, names: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 400
    assert names in response.text


async def test_the_stylesheet_is_served_with_a_content_hash_and_cached_for_long(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/crcr")
    match = re.search(r'href="(/crcr/static/hud\.css\?v=[0-9a-f]{12})"', page.text)
    assert match is not None
    css = await client.get(match.group(1))
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert "immutable" in css.headers["cache-control"]
    assert "light-dark(" in css.text and '[data-theme="dark"]' in css.text


async def test_the_theme_script_is_linked_in_the_head_with_a_content_hash(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/crcr/levels")
    head = page.text.split("</head>")[0]
    match = re.search(r'<script src="(/crcr/static/theme\.js\?v=[0-9a-f]{12})"></script>', head)
    assert match is not None  # blocking, in <head>: the stored theme applies before paint
    script = await client.get(match.group(1))
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert "immutable" in script.headers["cache-control"]
    assert "localStorage" in script.text


async def test_only_the_known_static_files_are_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/crcr/static/routes.py")
    assert response.status_code == 404
    assert response.json() == {"detail": "no static file named 'routes.py'"}


async def test_the_matrix_pages_through_commits_newest_first(client: httpx.AsyncClient) -> None:
    await post(client, seed.Result("acme/gate", "L4", 101, seed.SHA_101, "build", "success"))
    await post(client, seed.Result("acme/gate", "L4", 102, seed.SHA_102, "build", "failure"))

    first = await client.get("/crcr/acme/gate")
    assert 'data-pr="102"' in first.text and 'data-pr="101"' not in first.text
    assert 'href="/crcr/acme/gate?page=2" rel="next"' in first.text
    assert "page 1 of 2" in first.text

    second = await client.get("/crcr/acme/gate?page=2")
    assert 'data-pr="101"' in second.text
    assert 'href="/crcr/acme/gate" rel="prev"' in second.text
    assert 'rel="next"' not in second.text


async def test_downstream_text_is_escaped(client: httpx.AsyncClient) -> None:
    job = '<script>alert("pwned")</script>'
    await post(client, seed.Result("acme/gate", "L4", 101, seed.SHA_101, job, "failure"))
    for path in ("/crcr/acme/gate", "/crcr/pr/101"):
        html = (await client.get(path)).text
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert" in html


async def test_filter_links_keep_the_other_filter(client: httpx.AsyncClient) -> None:
    html = (await client.get("/crcr?window=1&event=nightly")).text
    assert 'href="/crcr?window=1&amp;event=push"' in html  # event links keep window=1
    assert 'href="/crcr?window=30&amp;event=nightly"' in html  # window links keep the event
    assert 'href="/crcr?event=nightly" data-window="7"' in html  # the default is left out
