"""The PR view in Chromium: a superseded job says so, a path-skipped backend is listed
(SPEC §15), both sent to the HUD over its HTTP API as a relay sends them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect
from tests.hud.hud_bodies import our_body
from tests.hud.web.harness import seeded_hud
from tests.hud.web.seed import Clock

pytestmark = pytest.mark.browser

PR = 4242
OLD, NEW = "a1" * 20, "b2" * 20


def seed(client: httpx.Client, token: str, clock: Clock) -> None:
    headers = {"x-hud-internal-bot": token}
    superseded = our_body(
        repo="acme/gpu",
        pr_number=PR,
        head_sha=OLD,
        status="completed",
        conclusion="failure",
        completed_at="2026-11-20T10:30:00Z",
    )
    superseded["trusted"]["superseded_by"] = NEW
    response = client.post("/api/crcr/results", json=superseded, headers=headers)
    assert response.status_code == 200, response.text
    notice = {
        "upstream_repo": "pytorch/pytorch",
        "pr_number": PR,
        "head_sha": NEW,
        "delivery_id": "d-2",
        "skipped": ["acme/docs-averse"],
    }
    response = client.post("/api/crcr/path-skips", json=notice, headers=headers)
    assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def budget_hud_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    database: Path = tmp_path_factory.mktemp("hud") / "hud.db"
    with seeded_hud(database, seed) as url:
        yield url


def test_the_pr_view_shows_superseded_jobs_and_path_skipped_backends(
    page: Page, budget_hud_url: str
) -> None:
    page.goto(f"{budget_hud_url}/crcr/pr/{PR}")

    superseded = page.locator(f'[data-repo="acme/gpu"] [data-superseded="{NEW}"]')
    expect(superseded).to_have_text(f"superseded by {NEW[:7]}")
    skipped = page.locator('[data-path-skips] [data-skipped="acme/docs-averse"]')
    expect(skipped).to_contain_text("skipped: no matching paths")
    expect(skipped).to_contain_text(NEW[:7])
