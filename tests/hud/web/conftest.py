"""Fixtures for the page tests: a seeded live HUD, Chromium, and a place for screenshots."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from tests.hud.web import culprits_seed, failures_seed, health_seed, seed
from tests.hud.web.harness import DESKTOP, seeded_hud

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "hud"


@pytest.fixture(scope="module")
def hud_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a live HUD (SQLite file) holding `seed.RESULTS`, posted over HTTP."""
    database = tmp_path_factory.mktemp("hud") / "hud.db"
    with seeded_hud(database, seed.seed, demotion_lookup=seed.DemotionsForTests()) as url:
        yield url


def both_data_sets(client: httpx.Client, token: str, clock: seed.Clock) -> None:
    """seed.py's results and failures_seed.py's, so pages show every kind of cell and mark."""
    seed.seed(client, token, clock)
    failures_seed.seed(client, token, clock)


@pytest.fixture(scope="module")
def full_hud_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a live HUD holding both known data sets (the audit and screenshots)."""
    database = tmp_path_factory.mktemp("hud") / "hud.db"
    lookup = seed.DemotionsForTests()
    with seeded_hud(
        database,
        both_data_sets,
        demotion_lookup=lookup,
        health=health_seed.degraded_memo(),
        culprits=culprits_seed.lookup,
    ) as url:
        yield url


@pytest.fixture(scope="module")
def artifacts() -> Path:
    """Where screenshots go (git-ignored), for people and CI to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """A real Chromium (tests/browser.py), shared by a module's page tests."""
    require_chromium()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh tab at desktop size."""
    context = browser.new_context(viewport=DESKTOP)
    tab = context.new_page()
    yield tab
    context.close()
