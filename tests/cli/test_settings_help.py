"""`crcr serve --help` names what serving needs; the guide's settings table matches `Settings`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from crcr.cli.settings_help import (
    GUIDE,
    default_shown,
    guide_rows,
    missing_rows,
    required_to_serve,
    variable,
)
from crcr.config.settings import Settings

ROOT = Path(__file__).parents[2]
GUIDE_TEXT = (ROOT / GUIDE).read_text()


def test_serve_help_lists_the_required_settings_and_points_to_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "crcr", "serve", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "300", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    text = " ".join(done.stdout.split())

    assert required_to_serve() == [
        "CRCR_WEBHOOK_SECRET",
        "CRCR_GITHUB_APP_ID",
        "CRCR_GITHUB_APP_PRIVATE_KEY",
        "CRCR_ALLOWLIST",
    ]
    for name in required_to_serve():
        assert name in text
    assert "CRCR_<NAME>_FILE" in text
    assert "docs/operator-guide.md#2-settings" in text
    assert re.search(r"^## 2\. Settings$", GUIDE_TEXT, flags=re.MULTILINE)


def test_the_guide_has_a_row_for_every_setting() -> None:
    assert missing_rows(GUIDE_TEXT) == [], "add these rows to the guide's settings table"


@pytest.mark.parametrize("field", list(Settings.model_fields))
def test_each_row_shows_the_default_settings_has(field: str) -> None:
    cell = guide_rows(GUIDE_TEXT)[variable(field)]
    shown = default_shown(field)

    if variable(field) in required_to_serve():
        assert "required to serve" in cell
    elif shown is not None:
        assert f"`{shown}`" in cell, f"{variable(field)}: Settings' default is {shown!r}"


def test_a_changed_default_is_caught() -> None:
    drifted = GUIDE_TEXT.replace("| `CRCR_AUDIT_DAYS` | `30` |", "| `CRCR_AUDIT_DAYS` | `31` |")
    assert drifted != GUIDE_TEXT
    assert "`30`" not in guide_rows(drifted)["CRCR_AUDIT_DAYS"]
    assert default_shown("audit_days") == "30"
