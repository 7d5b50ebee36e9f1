"""Screenshots of each page in both themes for docs/hud.md, taken by the tests.

With CRCR_UPDATE_SCREENSHOTS=1 the test (re)writes docs/screenshots/<page>-<theme>.png;
otherwise it renders the same pages and checks that every screenshot the docs show is
committed and is a PNG of the agreed width, without touching the files (the pages carry
dates and "ago" times, so a fresh picture would dirty git on every run).

Pixels cannot tell a stale picture from a fresh one for that reason, so each picture is
kept with the page's *layout* when it was taken (docs/screenshots/layouts.json): every
kind of element shown (tag, classes, id) and every script loaded, without any text. A
page that gained or lost a part since its picture (a find box, a live bar, a column)
fails the test, naming what changed, until the pictures are retaken.
"""

from __future__ import annotations

import io
import json
import os
import struct
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, expect

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[3] / "docs"
SCREENSHOTS = DOCS / "screenshots"
WIDTH, MAX_HEIGHT = 1280, 1000
UPDATE = os.environ.get("CRCR_UPDATE_SCREENSHOTS") == "1"
# (name, path): the pages docs/hud.md shows.
PAGES = (
    ("summary", "/crcr"),
    ("backend", "/crcr/acme/gate"),
    ("culprit", "/crcr/acme/flaky"),
    ("pr", "/crcr/pr/500"),
    ("levels", "/crcr/levels"),
    ("health", "/crcr/health"),
    ("alerts", "/crcr/alerts"),
    ("latency", "/crcr/metrics"),
    ("nightly", "/crcr/nightly"),
)
THEMES = ("light", "dark")
LAYOUTS = SCREENSHOTS / "layouts.json"
# Every visible element's kind (`tag.class.class#id`, no text) and every script's path.
LAYOUT_SCRIPT = """() => {
  const kinds = new Set();
  for (const element of document.querySelectorAll("body *")) {
    if (!element.checkVisibility()) continue;
    const classes = [...element.classList].sort().map((name) => "." + name).join("");
    kinds.add(element.tagName.toLowerCase() + classes + (element.id ? "#" + element.id : ""));
  }
  for (const script of document.scripts) {
    kinds.add("script " + (script.src ? new URL(script.src).pathname : "inline"));
  }
  return [...kinds].sort();
}"""


def layout(page: Page) -> list[str]:
    """What the page is made of, as LAYOUT_SCRIPT reads it."""
    kinds: list[str] = page.evaluate(LAYOUT_SCRIPT)
    return kinds


def stale_because(taken: list[str] | None, now: list[str]) -> str:
    """Why a picture taken of layout `taken` no longer shows the page (empty: it does)."""
    if taken is None:
        return "no layout was kept with it"
    added, gone = sorted(set(now) - set(taken)), sorted(set(taken) - set(now))
    if not added and not gone:
        return ""
    return f"the page now has {added} and no longer {gone}"


def save_small(page: Page, target: Path) -> None:
    """The top of the page (up to MAX_HEIGHT), in 256 colours: a third of the bytes of
    Chromium's own PNG and no visible difference for flat UI colours and text."""
    height = min(MAX_HEIGHT, page.evaluate("document.documentElement.scrollHeight"))
    shot = page.screenshot(full_page=True, clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
    image = Image.open(io.BytesIO(shot)).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    palette.save(target, "PNG", optimize=True)


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header (its IHDR chunk)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


@pytest.mark.parametrize("theme", THEMES)
def test_each_page_is_pictured_in_the_docs(browser: Browser, full_hud_url: str, theme: str) -> None:
    context = browser.new_context(
        viewport={"width": WIDTH, "height": 800},
        color_scheme="dark" if theme == "dark" else "light",
    )
    page = context.new_page()
    layouts = json.loads(LAYOUTS.read_text()) if LAYOUTS.exists() else {}
    stale = {}
    try:
        for name, path in PAGES:
            response = page.goto(full_hud_url + path)
            assert response is not None and response.status == 200, name
            expect(page.locator("main h1")).to_be_visible()
            target = SCREENSHOTS / f"{name}-{theme}.png"
            key = f"{name}-{theme}"
            if UPDATE:
                SCREENSHOTS.mkdir(exist_ok=True)
                save_small(page, target)
                layouts[key] = layout(page)
            assert target.exists(), f"{target} is missing: run with CRCR_UPDATE_SCREENSHOTS=1"
            assert png_size(target)[0] == WIDTH
            assert f"screenshots/{target.name}" in (DOCS / "hud.md").read_text(), target.name
            why = stale_because(layouts.get(key), layout(page))
            if why:
                stale[target.name] = why
    finally:
        context.close()
    if UPDATE:
        LAYOUTS.write_text(json.dumps(layouts, indent=1, sort_keys=True) + "\n")
    assert stale == {}, "stale screenshots: retake them with CRCR_UPDATE_SCREENSHOTS=1"


def test_a_changed_layout_makes_a_picture_stale() -> None:
    taken = ["header", "main", "script /crcr/static/theme.js"]
    assert stale_because(taken, list(taken)) == ""
    why = stale_because(taken, [*taken, "form.find", "script /crcr/static/live.js"])
    assert "form.find" in why and "live.js" in why
    assert stale_because(None, taken) == "no layout was kept with it"
