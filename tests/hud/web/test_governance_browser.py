"""Overrides, declines and the episode timeline in a real Chromium (SPEC §10.2).

The HUD is given standings as a relay beside it would give them: acme/flaky demoted a
day ago (its level since 20 days, and the demotion as episodes), acme/gate overridden
to L3 by an operator, acme/steady's demotion declined.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from tests.hud.web import seed
from tests.hud.web.harness import seeded_hud, snapshot

from crcr.hud.levels.providers import Decline, Demotion, Episode, Override, Standing

pytestmark = pytest.mark.browser


class StandingsForTests:
    """What `crcr.relay.levels.standings.StandingsForHud` would answer for seed.py's backends."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    async def standings(self) -> Mapping[str, Standing]:
        now, day = self.now, timedelta(days=1)
        return {
            "acme/flaky": Standing(
                "L2",
                demotion=Demotion(now - day, seed.DEMOTION_PR),
                episodes=(
                    Episode("level", now - 20 * day, None, "L3"),
                    Episode("demotion", now - day, None, "L3 → L2"),
                ),
                level="L3",
            ),
            "acme/gate": Standing(
                "L3",
                override=Override("L3", now + 2 * day, "runner fleet migration", "ops"),
                episodes=(
                    Episode("level", now - 30 * day, None, "L4"),
                    Episode("override", now - day, now + 2 * day, "L4 → L3: runner fleet"),
                ),
                level="L4",
            ),
            "acme/steady": Standing(
                "L2",
                declined=Decline("maintainer", now - day, now + 6 * day),
                episodes=(Episode("decline", now - day, now + 6 * day, "declined by maintainer"),),
                level="L2",
            ),
            "acme/dormant": Standing("L2", level="L2"),
        }


@pytest.fixture(scope="module")
def governed_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    database = tmp_path_factory.mktemp("hud") / "hud.db"
    with seeded_hud(database, seed.seed, governance_lookup=StandingsForTests()) as url:
        yield url


def test_the_levels_page_draws_episodes_and_shows_overrides_and_declines(
    page: Page, governed_url: str, artifacts: Path
) -> None:
    page.goto(f"{governed_url}/crcr/levels")

    flaky = page.locator('section.level-card[data-repo="acme/flaky"]')
    expect(flaky.locator("[data-demoted]")).to_be_visible()
    expect(flaky.locator("[data-treated-as]")).to_have_text("new jobs treated as L2")
    demotion = flaky.locator('svg.episodes-bar rect[data-episode="demotion"]')
    expect(demotion).to_have_count(1)
    box = demotion.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0
    expect(flaky.locator('li[data-episode="demotion"]')).to_contain_text("L3 → L2")
    expect(flaky.locator('li[data-episode="demotion"]')).to_contain_text("→ now")

    gate = page.locator('section.level-card[data-repo="acme/gate"]')
    expect(gate.locator("[data-override]")).to_contain_text("override: L3 until")
    expect(gate.locator("[data-override]")).to_have_attribute(
        "title", "runner fleet migration (by ops)"
    )
    steady = page.locator('section.level-card[data-repo="acme/steady"]')
    expect(steady.locator("[data-declined]")).to_contain_text("demotion declined by maintainer")
    snapshot(page, artifacts, "levels-governance")


def test_the_backend_page_says_what_level_new_jobs_are_treated_at(
    page: Page, governed_url: str
) -> None:
    page.goto(f"{governed_url}/crcr/acme/flaky")
    standing = page.locator("[data-standing]")
    expect(standing).to_have_attribute("data-standing", "lowered")
    expect(standing).to_contain_text("new jobs treated as L2 · Reporting")
    expect(standing.locator("[data-demoted] a")).to_have_attribute("href", seed.DEMOTION_PR)
    expect(page.locator("h1 .level")).to_have_text("L3")

    page.goto(f"{governed_url}/crcr/acme/gate")
    expect(page.locator("[data-standing] [data-override]")).to_contain_text(
        "by ops: runner fleet migration"
    )
