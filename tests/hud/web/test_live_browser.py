"""Live pages and the find box in a real Chromium, over a real server.

The pages poll the store's change marker every second here (15 s by default); a result
posted while a page is open must show up on it in place: no reload (a value set on
`window` survives), nothing swapped under the pointer, nothing while paused. With
JavaScript off the pages are the server-rendered snapshot and the find box still works.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import Engine
from tests.hud.web import seed
from tests.hud.web.harness import TOKEN, LiveServer, hud_app

from crcr.hud.db import create_results_engine, migrate

pytestmark = pytest.mark.browser


class Hud:
    """A live HUD on its own SQLite file, and a way to post results to it as they come."""

    def __init__(self, url: str, clock: seed.Clock) -> None:
        self.url = url
        self.clock = clock
        self.run = 0

    def post(self, result: seed.Result) -> None:
        # Results arrive later than the seed, as they would: the clock moves on.
        self.clock.now += timedelta(seconds=1)
        self.run += 1
        body = seed.result_body(result, self.clock.now)
        body["untrusted"]["callback_payload"]["workflow"]["run_id"] = f"live-{self.run}"
        with httpx.Client(base_url=self.url) as client:
            answer = client.post(
                "/api/crcr/results", json=body, headers={"x-hud-internal-bot": TOKEN}
            )
        assert answer.status_code == 200, answer.text


@pytest.fixture
def hud(tmp_path: Path) -> Iterator[Hud]:
    engine: Engine = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}")
    migrate(engine)
    clock = seed.Clock()
    try:
        with LiveServer(hud_app(engine, clock, live_seconds=1)) as server:
            with httpx.Client(base_url=server.url) as client:
                seed.seed(client, TOKEN, clock)
            yield Hud(server.url, clock)
    finally:
        engine.dispose()


def mark_window(page: Page) -> None:
    page.evaluate("window.notReloaded = true")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.notReloaded === true"), "the page was reloaded"


def test_a_result_posted_while_the_pr_page_is_open_appears_on_it(page: Page, hud: Hud) -> None:
    page.goto(f"{hud.url}/crcr/pr/101")
    mark_window(page)
    status = page.locator("#live-status")
    expect(status).to_be_visible()
    expect(page.locator("#live-age")).to_contain_text("updated")
    expect(page.locator('section[data-repo="acme/newcomer"]')).to_have_count(0)

    hud.post(seed.Result("acme/newcomer", "L2", 101, seed.SHA_101, "smoke", "failure"))

    panel = page.locator('section[data-repo="acme/newcomer"]')
    expect(panel).to_have_count(1)
    expect(panel.locator('tr[data-job="ci / smoke"]')).to_have_attribute("data-outcome", "failure")
    expect(page.locator("#live-announce")).to_have_text("New results shown.")
    assert_not_reloaded(page)


def test_the_summary_and_backend_pages_update_in_place(page: Page, hud: Hud) -> None:
    page.goto(f"{hud.url}/crcr")
    mark_window(page)
    runs = page.locator('[data-stat="runs"] .value')
    expect(runs).to_have_text("20")

    hud.post(seed.Result("acme/gate", "L4", 104, "1040" * 10, "build", "success"))

    expect(runs).to_have_text("21")
    assert_not_reloaded(page)

    page.goto(f"{hud.url}/crcr/acme/gate")
    mark_window(page)
    expect(page.locator('[data-pr="105"]')).to_have_count(0)
    hud.post(seed.Result("acme/gate", "L4", 105, "1050" * 10, "build", "failure"))
    expect(page.locator('[data-pr="105"]').first).to_be_visible()
    assert_not_reloaded(page)


def test_nothing_changes_under_the_pointer_until_it_moves_away(page: Page, hud: Hud) -> None:
    page.goto(f"{hud.url}/crcr/pr/101")
    gate = page.locator('section[data-repo="acme/gate"]')
    new_row = gate.locator('tr[data-job="ci / late"]')
    gate.locator("h2").hover()

    hud.post(seed.Result("acme/gate", "L4", 101, seed.SHA_101, "late", "success"))

    age = page.locator("#live-age")
    expect(age).to_contain_text("wait until the pointer")
    expect(new_row).to_have_count(0)
    page.mouse.move(1, 1)  # off the panel, onto the top bar
    expect(new_row).to_have_count(1)
    expect(age).not_to_contain_text("wait until")


def test_paused_pages_stay_as_they_are_until_resumed(page: Page, hud: Hud) -> None:
    page.goto(f"{hud.url}/crcr/pr/101")
    pause = page.get_by_role("button", name="Pause live updates")
    pause.click()
    expect(page.locator("#live-announce")).to_have_text("Live updates paused.")
    resume = page.get_by_role("button", name="Resume live updates")
    expect(resume).to_be_focused()

    hud.post(seed.Result("acme/paused", "L2", 101, seed.SHA_101, "build", "success"))

    # Three poll intervals pass by the page's own clock, and still nothing is fetched.
    expect(page.locator("#live-age")).to_contain_text("3 s ago · paused", timeout=10_000)
    expect(page.locator('section[data-repo="acme/paused"]')).to_have_count(0)
    resume.press("Enter")
    expect(page.locator('section[data-repo="acme/paused"]')).to_have_count(1)


def test_the_find_box_reaches_a_pr_a_sha_prefix_and_a_backend(page: Page, hud: Hud) -> None:
    page.goto(f"{hud.url}/crcr")
    box = page.get_by_role("searchbox", name="Find a PR, commit or backend")

    for query, url, heading in [
        ("#101", "/crcr/pr/101", "pytorch/pytorch#101"),
        (seed.SHA_102[:8], "/crcr/pr/102", "pytorch/pytorch#102"),
        (seed.NIGHTLY_NEW[:6], "/crcr/acme/steady", "acme/steady"),  # a nightly's commit
        ("dormant", "/crcr/acme/dormant", "acme/dormant"),
    ]:
        box.fill(query)
        box.press("Enter")
        expect(page).to_have_url(f"{hud.url}{url}")
        expect(page.get_by_role("heading", level=1)).to_contain_text(heading)

    box.fill("no-such-thing")
    with page.expect_response(lambda r: "/crcr/find" in r.url) as answer:
        page.get_by_role("button", name="Find").click()
    assert answer.value.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Nothing matches “no-such-thing”")
    expect(box).to_have_value("no-such-thing")


def test_without_javascript_the_pages_are_snapshots_and_find_works(
    browser: Browser, hud: Hud
) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{hud.url}/crcr/pr/101")
        expect(page.locator("#live-status")).to_be_hidden()
        expect(page.locator('section[data-repo="acme/gate"]')).to_have_count(1)

        page.get_by_role("searchbox").fill("gate")
        page.get_by_role("button", name="Find").click()
        expect(page).to_have_url(f"{hud.url}/crcr/acme/gate")
    finally:
        context.close()
