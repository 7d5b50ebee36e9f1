"""A capped backend's running / waiting on its page, in a real Chromium (SPEC §15).

The HUD is lent a budget lookup as a relay beside it lends one: acme/steady is capped
at 4 with 3 running and 2 waiting; acme/dormant has no cap and shows no budget.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect
from tests.hud.web import seed
from tests.hud.web.harness import seeded_hud

from crcr.hud.web.budget_view import BudgetShown

pytestmark = pytest.mark.browser


async def budgets(repo: str) -> BudgetShown | None:
    return BudgetShown(max_concurrent=4, running=3, waiting=2) if repo == "acme/steady" else None


@pytest.fixture(scope="module")
def budgeted_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    database = tmp_path_factory.mktemp("hud") / "hud.db"
    with seeded_hud(database, seed.seed, budgets=budgets) as url:
        yield url


def test_a_capped_backend_shows_its_running_and_waiting_dispatches(
    page: Page, budgeted_url: str
) -> None:
    page.goto(f"{budgeted_url}/crcr/acme/steady")

    budget = page.locator("[data-budget]")
    expect(budget).to_be_visible()
    expect(budget.locator("[data-running]")).to_have_text("3 of 4")
    expect(budget.locator("[data-waiting]")).to_have_text("2 waiting")


def test_a_backend_without_a_cap_shows_no_budget(page: Page, budgeted_url: str) -> None:
    page.goto(f"{budgeted_url}/crcr/acme/dormant")

    expect(page.locator("h1")).to_contain_text("acme/dormant")
    expect(page.locator("[data-budget]")).to_have_count(0)
