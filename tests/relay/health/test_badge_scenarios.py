"""`GET /badge/<owner>/<repo>.svg` over the real relay (SPEC §13), on both state stores.

A backend's README shows its level and state; the SVG carries nothing from elsewhere
(its one URL is the SVG namespace), answers 304 to its own ETag, and refuses what it
cannot draw with the parameter or repository named.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import (
    L2_REPO,
    L3_REPO,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)

from crcr.hud.badges.svg import SVG_NAMESPACE
from crcr.sandbox.github_identity import SandboxApp

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    async with open_world(opener, tmp_path, installed_sandbox(sandbox_app), signing_key) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        yield opened


async def passing_push(world: World, sha: str) -> None:
    delivery = await world.push(sha)
    for status, conclusion in (("in_progress", None), ("completed", "success")):
        answer = await world.report(L3_REPO, delivery, status, conclusion)
        assert answer.status_code == 200, answer.text


def texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


async def test_a_passing_backend_shows_its_level_and_state_with_nothing_external(
    world: World,
) -> None:
    await passing_push(world, "a" * 40)

    answer = await world.client.get(f"/badge/{L3_REPO}.svg")

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("image/svg+xml")
    svg = answer.text
    assert texts(svg) == ["crcr L3", "passing"]
    assert re.findall(r"https?:[^\"' <]*", svg, flags=re.IGNORECASE) == [SVG_NAMESPACE]
    assert svg.lower().count("http") == 1
    for outside in ("<script", "@import", "@font-face", "href", "<image", "<style", "url("):
        assert outside not in svg.lower(), outside


async def test_the_etag_is_strong_and_answers_304_until_the_state_changes(world: World) -> None:
    first = await world.client.get(f"/badge/{L3_REPO}.svg")
    etag = first.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    assert first.headers["cache-control"] == "public, max-age=300"
    assert texts(first.text) == ["crcr L3", "no data"]

    again = await world.client.get(f"/badge/{L3_REPO}.svg", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag

    await passing_push(world, "b" * 40)
    changed = await world.client.get(f"/badge/{L3_REPO}.svg", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert texts(changed.text) == ["crcr L3", "passing"]


async def test_the_event_parameter_judges_only_that_events_jobs(world: World) -> None:
    await passing_push(world, "c" * 40)
    nightly = await world.client.get(f"/badge/{L3_REPO}.svg", params={"event": "nightly"})
    assert texts(nightly.text) == ["crcr L3 nightly", "no data"]
    push = await world.client.get(f"/badge/{L3_REPO}.svg", params={"event": "push"})
    assert texts(push.text) == ["crcr L3 push", "passing"]


async def test_a_bad_event_is_refused_naming_the_parameter(world: World) -> None:
    answer = await world.client.get(f"/badge/{L2_REPO}.svg", params={"event": "merge_group"})
    assert answer.status_code == 422
    assert "event" in answer.json()["detail"]


async def test_an_unknown_repository_is_a_404_naming_it(world: World) -> None:
    answer = await world.client.get("/badge/someone/elsewhere.svg")
    assert answer.status_code == 404
    assert answer.json()["detail"] == (
        "no crcr backend someone/elsewhere: it is not on the allowlist and sent no results"
    )


async def test_the_allowlists_spelling_is_found_in_any_case(world: World) -> None:
    answer = await world.client.get(f"/badge/{L2_REPO.upper()}.svg")
    assert answer.status_code == 200
    assert texts(answer.text) == ["crcr L2", "no data"]
