"""The backend page's "Who broke main" section (SPEC §14) in Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from tests.hud.web import culprits_seed

pytestmark = pytest.mark.browser


def test_a_confirmed_culprit_shows_with_its_pr_range_and_every_step(
    page: Page, full_hud_url: str
) -> None:
    page.goto(f"{full_hud_url}/crcr/{culprits_seed.BACKEND}")

    section = page.locator("[data-section=culprits]")
    expect(section).to_be_visible()
    bisection = section.locator("[data-verdict=confirmed]")
    expect(bisection).to_have_count(1)
    culprit = bisection.locator("[data-culprit]")
    expect(culprit).to_have_attribute(
        "href", f"https://github.com/pytorch/pytorch/commit/{culprits_seed.CULPRIT}"
    )
    expect(bisection.locator("[data-culprit-pr]")).to_have_attribute(
        "href", "https://github.com/pytorch/pytorch/pull/1203"
    )
    expect(bisection).to_contain_text("7 commits after")
    expect(bisection).to_contain_text("4 dispatches")
    rows = bisection.locator("tr[data-step]")
    expect(rows).to_have_count(4)
    expect(rows.nth(3)).to_contain_text("re-test of the culprit")
    expect(rows.nth(0)).to_contain_text("success")


def test_a_backend_without_bisections_has_no_section(page: Page, full_hud_url: str) -> None:
    page.goto(f"{full_hud_url}/crcr/acme/gate")

    expect(page.locator("main h1")).to_be_visible()
    expect(page.locator("[data-section=culprits]")).to_have_count(0)
