"""Debian's Chromium for the browser tests, driven by Playwright."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Skip (locally) or fail (in CI) when Chromium is not installed."""
    if CHROMIUM.exists():
        return
    reason = f"Chromium is not installed at {CHROMIUM}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI requires it)")
    pytest.skip(reason)
