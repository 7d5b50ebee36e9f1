"""The theme toggle in a real Chromium: light, dark or system, remembered per browser,
applied before the first paint, and the system's preference followed otherwise."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect
from tests.hud.web.harness import DESKTOP
from tests.hud.web.theme import STORAGE_KEY

pytestmark = pytest.mark.browser

LIGHT_BG, DARK_BG = "rgb(246, 248, 250)", "rgb(13, 17, 23)"
# Records the theme on <html> at the moment <body> is parsed: before anything is painted.
THEME_WHEN_BODY_STARTS = """
new MutationObserver((_, observer) => {
  if (document.body) {
    window.themeAtFirstBody = document.documentElement.getAttribute("data-theme");
    observer.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""


@pytest.fixture
def light_system_page(browser: Browser) -> Iterator[Page]:
    """A tab whose system preference is light, recording the theme at the first <body>."""
    context = browser.new_context(viewport=DESKTOP, color_scheme="light")
    context.add_init_script(THEME_WHEN_BODY_STARTS)
    yield context.new_page()
    context.close()


def background(page: Page) -> str:
    return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))


def test_a_chosen_theme_persists_across_reloads_and_pages(
    light_system_page: Page, hud_url: str
) -> None:
    page = light_system_page
    page.goto(f"{hud_url}/crcr")
    toggle = page.get_by_role("group", name="Theme")
    expect(toggle).to_be_visible()
    expect(toggle.get_by_role("button", name="System")).to_have_attribute("aria-pressed", "true")
    assert background(page) == LIGHT_BG

    toggle.get_by_role("button", name="Dark").click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(toggle.get_by_role("button", name="Dark")).to_have_attribute("aria-pressed", "true")
    expect(toggle.get_by_role("button", name="System")).to_have_attribute("aria-pressed", "false")
    assert background(page) == DARK_BG
    assert page.evaluate(f"localStorage.getItem('{STORAGE_KEY}')") == "dark"

    page.reload()
    assert page.evaluate("window.themeAtFirstBody") == "dark"  # no flash of the light theme
    assert background(page) == DARK_BG
    expect(page.get_by_role("button", name="Dark")).to_have_attribute("aria-pressed", "true")

    page.get_by_role("link", name="Levels").click()
    expect(page).to_have_url(f"{hud_url}/crcr/levels")
    assert page.evaluate("window.themeAtFirstBody") == "dark"
    assert background(page) == DARK_BG


def test_system_keeps_following_the_system_preference(
    light_system_page: Page, hud_url: str
) -> None:
    page = light_system_page
    page.goto(f"{hud_url}/crcr/nightly")
    page.get_by_role("button", name="Light").click()
    page.emulate_media(color_scheme="dark")
    assert background(page) == LIGHT_BG  # a chosen theme wins over the system

    page.get_by_role("button", name="System").click()
    expect(page.locator("html")).not_to_have_attribute("data-theme", "light")
    assert page.evaluate(f"localStorage.getItem('{STORAGE_KEY}')") is None
    assert background(page) == DARK_BG
    page.emulate_media(color_scheme="light")
    assert background(page) == LIGHT_BG
    page.reload()
    assert page.evaluate("window.themeAtFirstBody") is None
    assert background(page) == LIGHT_BG


def test_the_toggle_works_from_the_keyboard(light_system_page: Page, hud_url: str) -> None:
    page = light_system_page
    page.goto(f"{hud_url}/crcr/metrics")
    dark = page.get_by_role("button", name="Dark")
    for _ in range(15):  # brand, navigation, upstream link, then the toggle
        page.keyboard.press("Tab")
        if dark.evaluate("button => button === document.activeElement"):
            break
    else:
        pytest.fail("Tab never reached the theme toggle")
    page.keyboard.press("Enter")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Space")
    expect(page.locator("html")).to_have_attribute("data-theme", "light")


@pytest.mark.parametrize(("scheme", "colour"), [("light", LIGHT_BG), ("dark", DARK_BG)])
def test_without_javascript_the_page_follows_the_system(
    browser: Browser, hud_url: str, scheme: str, colour: str
) -> None:
    context = browser.new_context(viewport=DESKTOP, color_scheme=scheme, java_script_enabled=False)  # type: ignore[arg-type]
    page = context.new_page()
    try:
        page.goto(f"{hud_url}/crcr")
        expect(page.locator("[data-theme-toggle]")).to_be_hidden()  # a control that can't work
        assert background(page) == colour
    finally:
        context.close()
