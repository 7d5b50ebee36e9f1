"""The four ways a page can be themed, for tests that must hold in each of them.

The HUD follows the system's `prefers-color-scheme` unless the reader chose a theme with
the toggle, which is remembered in localStorage under STORAGE_KEY. A chosen theme is
tested against the opposite system preference, so it is seen to win.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from playwright.sync_api import Browser, Page, ViewportSize

STORAGE_KEY = "crcr-hud-theme"
Scheme = Literal["light", "dark"]


@dataclass(frozen=True)
class Theme:
    """A system preference, the stored choice (None: "system"), the theme that results."""

    name: str
    system: Scheme
    chosen: Scheme | None

    @property
    def expected(self) -> Scheme | None:
        """`data-theme` on <html>: set only when the reader chose a theme."""
        return self.chosen


THEMES = (
    Theme("system-light", "light", None),
    Theme("system-dark", "dark", None),
    Theme("chosen-light", "dark", "light"),
    Theme("chosen-dark", "light", "dark"),
)


@contextmanager
def open_in_theme(browser: Browser, theme: Theme, viewport: ViewportSize) -> Iterator[Page]:
    """A fresh tab with the system preference emulated and the choice already stored."""
    context = browser.new_context(viewport=viewport, color_scheme=theme.system)
    if theme.chosen is not None:
        stored = f"localStorage.setItem({json.dumps(STORAGE_KEY)}, {json.dumps(theme.chosen)})"
        context.add_init_script(stored)
    try:
        yield context.new_page()
    finally:
        context.close()
