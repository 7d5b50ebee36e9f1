"""The dashboard in a real Chromium, over a real server, on known results (see seed.py).

Each test opens a page, checks the figures against the seeded data, and saves
screenshots at desktop and phone sizes into test-artifacts/hud/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from tests.hud.web import seed
from tests.hud.web.harness import snapshot

pytestmark = pytest.mark.browser


def row(page: Page, repo: str) -> object:
    return page.locator(f'table.backends tr[data-repo="{repo}"]')


def test_summary_shows_every_backend_by_level_worst_first(
    page: Page, hud_url: str, artifacts: Path
) -> None:
    page.goto(f"{hud_url}/crcr")
    expect(page.locator('[data-stat="runs"] .value')).to_have_text("20")
    expect(page.locator('[data-stat="failures"] .value')).to_have_text("4")
    expect(page.locator('[data-stat="backends"] .value')).to_have_text("3")
    expect(page.locator('[data-stat="timed_out"] .value')).to_have_text("1")

    levels = page.locator("section.panel[data-level]")
    expect(levels).to_have_count(3)
    assert [levels.nth(i).get_attribute("data-level") for i in range(3)] == ["L4", "L3", "L2"]
    l2_rows = page.locator('section[data-level="L2"] tbody tr')
    expect(l2_rows.nth(0)).to_have_attribute("data-repo", "acme/steady")
    expect(l2_rows.nth(1)).to_have_attribute("data-repo", "acme/dormant")

    gate = page.locator('tr[data-repo="acme/gate"]')
    expect(gate.locator(".rate")).to_have_text("90%")
    expect(gate.locator(".rate")).to_have_class("rate tone-warn")
    expect(gate.locator('[data-col="failures"]')).to_have_text("1")
    expect(gate.locator('[data-col="total"]')).to_have_text("10")
    expect(gate.locator("svg.spark")).to_have_count(1)

    flaky = page.locator('tr[data-repo="acme/flaky"]')
    expect(flaky.locator(".rate")).to_have_text("40%")
    expect(flaky.locator(".rate")).to_have_class("rate tone-bad")
    expect(flaky.locator('[data-col="timed_out"]')).to_have_text("1")

    steady = page.locator('tr[data-repo="acme/steady"]')
    expect(steady.locator(".rate")).to_have_text("80%")  # 3 PR jobs + 1 of 2 nightlies
    dormant = page.locator('tr[data-repo="acme/dormant"]')
    expect(dormant.locator(".rate")).to_have_text("—")
    expect(dormant.locator(".dot.idle")).to_have_count(1)
    snapshot(page, artifacts, "summary")


def test_window_and_event_filters_change_the_figures(page: Page, hud_url: str) -> None:
    page.goto(f"{hud_url}/crcr")
    page.get_by_role("link", name="30d").click()
    expect(page).to_have_url(f"{hud_url}/crcr?window=30")
    expect(page.locator('[data-stat="runs"] .value')).to_have_text("21")
    dormant = page.locator('tr[data-repo="acme/dormant"]')
    expect(dormant.locator(".rate")).to_have_text("100%")
    expect(dormant.locator(".rate")).to_have_class("rate tone-good")

    page.locator('a[data-event="pull_request"]').click()
    expect(page).to_have_url(f"{hud_url}/crcr?window=30&event=pull_request")
    steady = page.locator('tr[data-repo="acme/steady"]')
    expect(steady.locator(".rate")).to_have_text("100%")  # the failed nightly is filtered out
    expect(page.locator('a[data-window="30"]')).to_have_attribute("aria-current", "true")


def test_from_the_summary_to_a_backend_to_a_pull_request(
    page: Page, hud_url: str, artifacts: Path
) -> None:
    page.goto(f"{hud_url}/crcr")
    page.get_by_role("link", name="acme/gate").click()
    expect(page).to_have_url(f"{hud_url}/crcr/acme/gate")
    expect(page.locator('[data-stat="pass_rate"] .value')).to_have_text("90%")
    expect(page.locator('[data-stat="prs"] .value')).to_have_text("2")
    expect(page.locator('[data-stat="queue"] .value')).to_have_text("30s")
    expect(page.locator('[data-stat="exec"] .value')).to_have_text("10m 00s")

    rows = page.locator("table.matrix tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-pr", "102")  # newest first
    expect(rows.nth(0).locator("a.mono")).to_have_text(seed.SHA_102[:7])
    failed_test = rows.nth(1).locator('td[data-column="ci / test"]')
    expect(failed_test).to_have_attribute("data-outcome", "failure")
    expect(failed_test.locator(".box")).to_have_text("\u2717 \u00d73")  # cross, "times 3"
    expect(failed_test.locator(".box")).to_have_attribute(
        "href", "https://github.com/acme/gate/actions/runs/101/attempts/1"
    )
    tooltip = failed_test.locator(".box").get_attribute("title") or ""
    assert "worst of 3 shards" in tooltip and "queue 30s" in tooltip
    expect(rows.nth(0).locator('td[data-column="ci / test"]')).to_have_attribute(
        "data-outcome", "success"
    )
    expect(rows.nth(0).locator('td[data-column="ci / build"] .meta a')).to_have_text("logs")
    snapshot(page, artifacts, "backend")

    page.locator('a[data-event="push"]').click()
    expect(page).to_have_url(f"{hud_url}/crcr/acme/gate?event=push")
    expect(page.locator(".empty-state")).to_contain_text("any job for pushes to main in the")
    page.go_back()

    page.get_by_role("link", name="#101").click()
    expect(page).to_have_url(f"{hud_url}/crcr/pr/101")
    panels = page.locator("section.panel[data-repo]")
    expect(panels).to_have_count(2)
    flaky = page.locator('section[data-repo="acme/flaky"]')
    build = flaky.locator('tr[data-job="ci / build"]')
    expect(build).to_have_attribute("data-outcome", "success")
    earlier = build.locator("details")
    expect(earlier.get_by_role("link", name="attempt 1")).to_be_hidden()
    earlier.locator("summary").click()
    expect(earlier.get_by_role("link", name="attempt 1")).to_be_visible()
    expect(flaky.locator('tr[data-job="ci / lint"]')).to_have_attribute("data-outcome", "timed_out")
    gate_jobs = page.locator('section[data-repo="acme/gate"] tbody tr')
    expect(gate_jobs).to_have_count(5)  # three shards listed one by one here
    snapshot(page, artifacts, "pr")


def test_metrics_page_draws_percentile_charts_per_backend(
    page: Page, hud_url: str, artifacts: Path
) -> None:
    page.goto(f"{hud_url}/crcr/metrics")
    panels = page.locator("section.panel[data-repo]")
    expect(panels).to_have_count(3)
    gate = page.locator('section[data-repo="acme/gate"]')
    charts = gate.locator("svg.chart:visible")
    expect(charts).to_have_count(2)  # queue and execution, drawn for this screen size
    legend = charts.first.locator("text.legend")
    expect(legend).to_have_text(["p50", "p90", "p99"])
    # Rollup percentiles come from log-scale buckets: near 30 s, within a few percent.
    titles = charts.first.locator("circle title").all_text_contents()
    [median] = [title for title in titles if title.startswith("p50 · ")]
    assert median.endswith(("29s", "30s", "31s")), median
    snapshot(page, artifacts, "metrics")


def test_nightly_page_shows_the_latest_tested_upstream_commit(
    page: Page, hud_url: str, artifacts: Path
) -> None:
    page.goto(f"{hud_url}/crcr/nightly")
    rows = page.locator("table.nightly tbody tr")
    expect(rows).to_have_count(1)
    steady = rows.first
    expect(steady).to_have_attribute("data-repo", "acme/steady")
    expect(steady.locator("a.mono")).to_have_text(seed.NIGHTLY_NEW[:7])
    expect(steady.locator(".rate").first).to_have_text("✓ success")
    expect(steady.locator("td.num .rate")).to_have_text("50%")
    snapshot(page, artifacts, "nightly")
