"""Screen sizes the page tests use, and screenshots at both with a check that phones fit."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def snapshot(page: Page, artifacts: Path, name: str) -> None:
    """Save the page at desktop and phone width, and check the phone layout fits."""
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(artifacts / f"{name}-desktop.png"), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(artifacts / f"{name}-phone.png"), full_page=True)
    # Wide tables scroll inside their panel; the page itself never scrolls sideways.
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name} is {overflow}px wider than a phone screen"
    page.set_viewport_size(DESKTOP)
