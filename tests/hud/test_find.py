"""The find box's lookup (`GET /api/crcr/find`) and the live pages' change marker
(`GET /api/crcr/freshness`), over SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine
from tests.hud.hud_bodies import completed, our_body
from tests.hud.test_api import Clock, make_app, post

PR_SHA = "c0ffee" + "1" * 34
PUSH_SHA = "c0ffee" + "2" * 34


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def client(engine: Engine, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=make_app(engine, clock))
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:
        await post(http, our_body(repo="acme/xpu-backend", pr_number=4242, head_sha=PR_SHA))
        await post(http, our_body(repo="acme/rocm-ci", pr_number=4242, head_sha=PR_SHA))
        push = our_body(
            repo="acme/rocm-ci", event_type="push", pr_number=0, head_sha=PUSH_SHA, run_id="2"
        )
        await post(http, push)
        yield http


async def find(client: httpx.AsyncClient, q: str) -> list[dict[str, Any]]:
    response = await client.get("/api/crcr/find", params={"q": q})
    assert response.status_code == 200, response.text
    assert response.json()["query"] == q
    matches: list[dict[str, Any]] = response.json()["matches"]
    return matches


async def test_a_pr_number_is_found_with_or_without_its_hash(client: httpx.AsyncClient) -> None:
    for q in ("4242", "#4242", "https://github.com/pytorch/pytorch/pull/4242"):
        assert [(m["kind"], m["pr_number"]) for m in await find(client, q)] == [("pr", 4242)]
    assert await find(client, "4243") == []


async def test_a_sha_prefix_finds_the_pr_it_belongs_to_once(client: httpx.AsyncClient) -> None:
    matches = await find(client, "C0FFEE111")

    # Two backends ran the PR's head: one match, pointing at the PR.
    assert [(m["kind"], m["pr_number"], m["head_sha"]) for m in matches] == [
        ("commit", 4242, PR_SHA)
    ]


async def test_a_pushed_commit_points_at_the_backend_that_tested_it(
    client: httpx.AsyncClient,
) -> None:
    matches = await find(client, PUSH_SHA)

    assert [(m["kind"], m["repo"], m["pr_number"]) for m in matches] == [
        ("commit", "acme/rocm-ci", None)
    ]


async def test_an_ambiguous_prefix_lists_every_commit(client: httpx.AsyncClient) -> None:
    matches = await find(client, "c0ffee")

    assert {m["head_sha"] for m in matches} == {PR_SHA, PUSH_SHA}


async def test_a_backend_is_found_by_its_name_or_part_of_it(client: httpx.AsyncClient) -> None:
    assert [m["repo"] for m in await find(client, "acme/rocm-ci")] == ["acme/rocm-ci"]
    assert [m["repo"] for m in await find(client, "ROCM")] == ["acme/rocm-ci"]
    assert [m["repo"] for m in await find(client, "acme")] == ["acme/rocm-ci", "acme/xpu-backend"]
    assert await find(client, "no-such-thing") == []


async def test_an_empty_or_overlong_query_is_refused_naming_q(client: httpx.AsyncClient) -> None:
    for q in ("", "x" * 201):
        response = await client.get("/api/crcr/find", params={"q": q})
        assert response.status_code == 422
        assert "q" in str(response.json()["detail"])


async def test_freshness_changes_with_every_result_written(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    first = (await client.get("/api/crcr/freshness")).json()
    assert first["last_result_at"] is not None

    clock.now += timedelta(seconds=1)
    body = our_body(repo="acme/xpu-backend", pr_number=4242, head_sha=PR_SHA)
    await post(client, completed(body, "success"))  # an update: no new row
    second = (await client.get("/api/crcr/freshness")).json()
    await post(client, our_body(repo="acme/xpu-backend", pr_number=7, run_id="77"))
    third = (await client.get("/api/crcr/freshness")).json()

    assert len({first["version"], second["version"], third["version"]}) == 3


async def test_the_new_endpoints_have_schemas_in_openapi(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]

    assert {"FindResult", "FindMatch", "Freshness"} <= set(schemas)
