"""Failure detail in a real Chromium: the PR page's lead line, the marks (see failures_seed.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from tests.hud.web import failures_seed
from tests.hud.web.failures_seed import NORTHWIND, PR, ROCM, SAFE_LOG, ZETA
from tests.hud.web.harness import seeded_hud, snapshot

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def hud_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live HUD (SQLite file) holding the failures of `failures_seed`, posted over HTTP."""
    with seeded_hud(tmp_path_factory.mktemp("hud") / "hud.db", failures_seed.seed) as url:
        yield url


def job_row(page: Page, repo: str, job: str) -> object:
    return page.locator(f'section[data-repo="{repo}"] tr[data-job="ci / {job}"]')


def test_the_pr_page_leads_with_one_line_a_reviewer_can_act_on(
    page: Page, hud_url: str, artifacts: Path
) -> None:
    page.goto(f"{hud_url}/crcr/pr/{PR}")

    lead = page.locator("[data-lead]")
    expect(lead).to_have_text(
        f"3 backends fail: 1 new failure ({NORTHWIND}), 1 already failing on main ({ROCM}), "
        f"1 with no result from main to compare ({ZETA}) · 1 flaky job passed on re-run"
    )
    expect(lead).to_have_class("lead tone-bad")
    # The line comes before any backend's panel (after the live-update status line).
    blocks = page.locator("main > :not(#live-status)")
    assert blocks.first.evaluate("e => e.matches('.page-head')")
    assert blocks.nth(1).evaluate("e => e.matches('[data-lead]')")
    snapshot(page, artifacts, "pr-failures")


def test_each_failed_job_carries_a_mark_in_words_and_colour(page: Page, hud_url: str) -> None:
    page.goto(f"{hud_url}/crcr/pr/{PR}")

    marks = {
        (NORTHWIND, "test"): ("new", "▲ new failure: not seen on main", "tone-bad"),
        (ROCM, "test"): ("already_failing", "≡ already failing on main", "tone-warn"),
        (ROCM, "lint"): ("flaky", "↻ flaky: passed on re-run", "tone-running"),
        (ZETA, "test"): ("unknown", "? no result from main to compare", "tone-muted"),
    }
    for (repo, job), (verdict, words, tone) in marks.items():
        shown = job_row(page, repo, job).locator("[data-baseline]")
        expect(shown).to_have_attribute("data-baseline", verdict)
        expect(shown).to_have_text(words)
        expect(shown).to_have_class(f"mark {tone}")
    expect(job_row(page, NORTHWIND, "build").locator("[data-baseline]")).to_have_count(0)


def test_failed_tests_claims_and_contradictions_show_on_the_pr_page(
    page: Page, hud_url: str
) -> None:
    page.goto(f"{hud_url}/crcr/pr/{PR}")

    northwind_test = job_row(page, NORTHWIND, "test")
    expect(northwind_test.locator(".failed-tests code")).to_have_text(["test_conv", "test_mm"])
    claim = northwind_test.locator("[data-claim]")
    expect(claim).to_contain_text("the downstream's claim, not checked by the HUD")
    expect(claim).to_contain_text("category upstream · confidence high")
    expect(claim.locator('[data-suspects="this-pr"]')).to_have_text("suspects this PR")
    expect(claim.get_by_role("link")).to_have_count(1)
    expect(claim.get_by_role("link")).to_have_attribute("href", SAFE_LOG)

    contradicted = job_row(page, NORTHWIND, "build").locator('[data-confirmed="false"]')
    expect(contradicted).to_have_text("⚠ contradicted: GitHub says failure")


def test_the_backend_matrix_marks_cells_and_lists_failed_tests(
    page: Page, hud_url: str, artifacts: Path
) -> None:
    page.goto(f"{hud_url}/crcr/{ROCM}")

    pr_row = page.locator(f'table.matrix tr[data-pr="{PR}"]')
    test_cell = pr_row.locator('td[data-column="ci / test"]')
    expect(test_cell.locator("[data-baseline]")).to_have_text("≡ on main")
    tests = test_cell.locator("details.tests")
    expect(tests.locator("summary")).to_have_text("1 failed test")
    expect(tests.locator("code")).to_be_hidden()
    tests.locator("summary").click()
    expect(tests.locator("code")).to_have_text(["test_conv"])
    expect(pr_row.locator('td[data-column="ci / lint"] [data-baseline]')).to_have_text("↻ flaky")
    legend = page.locator('[aria-label="Failures compared with main"] [data-baseline]')
    expect(legend).to_have_count(4)
    snapshot(page, artifacts, "backend-failures")

    page.goto(f"{page.url.split('/crcr/')[0]}/crcr/{NORTHWIND}")
    cell = page.locator(f'table.matrix tr[data-pr="{PR}"] td[data-column="ci / build"]')
    expect(cell.locator('[data-confirmed="false"]')).to_have_text("⚠ contradicted")
