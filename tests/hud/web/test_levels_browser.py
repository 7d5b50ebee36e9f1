"""The levels page and the summary's verdict badges in a real Chromium, on seed.py's results."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from tests.hud.web import seed
from tests.hud.web.harness import snapshot

pytestmark = pytest.mark.browser


def test_each_backend_shows_its_level_verdict_and_every_criterion(
    page: Page, hud_url: str, artifacts: Path
) -> None:
    page.goto(f"{hud_url}/crcr/levels")
    expect(page.locator('nav a[aria-current="page"]')).to_have_text("Levels")

    cards = page.locator("section.level-card")
    expect(cards).to_have_count(4)
    assert [cards.nth(i).get_attribute("data-repo") for i in range(4)] == [
        "acme/gate",
        "acme/flaky",
        "acme/dormant",
        "acme/steady",
    ]

    gate = page.locator('section.level-card[data-repo="acme/gate"]')
    expect(gate.locator(".panel-head .level")).to_have_text("L4")
    expect(gate.locator(".panel-head [data-verdict]")).to_have_text("healthy")
    pass_rate = gate.locator('tr[data-criterion="job_pass_rate"]')
    expect(pass_rate.locator("td").nth(1)).to_have_text("90%")
    expect(pass_rate.locator("td").nth(2)).to_have_text("≥ 90%")
    expect(pass_rate).to_have_attribute("data-met", "true")

    flaky = page.locator('section.level-card[data-repo="acme/flaky"]')
    expect(flaky).to_have_attribute("data-verdict", "demote")
    expect(flaky.locator('tr[data-criterion="job_pass_rate"] td').nth(1)).to_have_text("50%")
    expect(flaky.locator('tr[data-criterion="timeout_rate"]')).to_have_attribute(
        "data-met", "false"
    )
    expect(flaky.locator(".unmet")).to_have_count(2)

    steady = page.locator('section.level-card[data-repo="acme/steady"]')
    expect(steady.locator(".panel-head [data-verdict]")).to_have_text("not ready")
    expect(steady.locator("tr[data-criterion]")).to_have_count(6)
    expect(steady.locator('tr[data-criterion="days_at_l2"] td').nth(1)).to_have_text("4 days")
    expect(steady.locator('tr[data-criterion="days_at_l2"]')).to_have_attribute("data-met", "false")

    dormant = page.locator('section.level-card[data-repo="acme/dormant"]')
    expect(dormant.locator(".panel-head [data-verdict]")).to_have_text("no data")
    expect(dormant.locator('tr[data-met="none"]')).to_have_count(6)
    snapshot(page, artifacts, "levels")


def test_the_level_history_is_a_small_timeline(page: Page, hud_url: str) -> None:
    page.goto(f"{hud_url}/crcr/levels")

    steady = page.locator('section.level-card[data-repo="acme/steady"]')
    expect(steady.locator("svg.timeline-bar rect.seg-L2")).to_have_count(1)
    expect(steady.locator(".timeline-legend li")).to_have_count(1)
    expect(steady.locator(".timeline-legend li")).to_have_attribute("data-level", "L2")


def test_temporarily_demoted_backends_have_their_own_section(page: Page, hud_url: str) -> None:
    page.goto(f"{hud_url}/crcr/levels")

    demoted = page.locator('section[data-section="demoted"] tbody tr')
    expect(demoted).to_have_count(1)
    expect(demoted).to_have_attribute("data-repo", "acme/flaky")
    expect(demoted.locator("a[data-pr]")).to_have_attribute("href", seed.DEMOTION_PR)
    expect(demoted.locator("td").nth(2)).to_contain_text("(1d ago)")
    expect(
        page.locator('section.level-card[data-repo="acme/flaky"] [data-demoted]')
    ).to_be_visible()


def test_the_summary_shows_each_backends_verdict_beside_its_level(page: Page, hud_url: str) -> None:
    page.goto(f"{hud_url}/crcr")

    flaky = page.locator('table.backends tr[data-repo="acme/flaky"] [data-col="level"]')
    expect(flaky.locator("[data-verdict]")).to_have_text("demote")
    expect(flaky.locator("[data-demoted]")).to_have_text("demoted")
    gate = page.locator('table.backends tr[data-repo="acme/gate"] [data-col="level"]')
    expect(gate.locator("[data-verdict]")).to_have_text("healthy")
    expect(gate.locator("[data-demoted]")).to_have_count(0)

    flaky.locator("[data-verdict]").click()
    expect(page).to_have_url(f"{hud_url}/crcr/levels")
