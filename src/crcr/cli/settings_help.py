"""What `crcr serve --help` says about settings, and the guide's table it points to.

Both come from `Settings` itself: the variables `crcr serve` refuses to start without
(`Settings.missing_for_serving` on no settings at all), and each setting's default as
the operator guide's table must show it (tests/cli/test_settings_help.py compares the
table with `Settings`, so a setting added or a default changed without the guide fails
the tests, which print the rows to add with their defaults filled in: `missing_rows`).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import SecretStr

from crcr.config.settings import Settings

GUIDE = "docs/operator-guide.md"
GUIDE_SETTINGS = f"{GUIDE}#2-settings"


def variable(field: str) -> str:
    """`upstream_repo` → `CRCR_UPSTREAM_REPO`."""
    return f"CRCR_{field.upper()}"


def required_to_serve() -> list[str]:
    """The variables `crcr serve` will not start without."""
    return Settings.model_construct().missing_for_serving()


def secret_settings() -> list[str]:
    """The variables holding secrets (each may be given as a file: `CRCR_<NAME>_FILE`)."""
    return [
        variable(name)
        for name, field in Settings.model_fields.items()
        if "SecretStr" in str(field.annotation) or field.annotation is SecretStr
    ]


def default_shown(field: str) -> str | None:
    """The default as the guide's table writes it (in backticks), or None when it is no
    plain value: unset, a list, a structure (the table then describes it in words)."""
    info = Settings.model_fields[field]
    default = info.get_default(call_default_factory=True)
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, Path):
        return str(default) if default.is_absolute() else f"./{default}"
    if isinstance(default, int | float | str):
        return str(default)
    return None


def serve_help() -> str:
    """The `crcr serve --help` text: what it runs, what it needs, where the rest is."""
    required = required_to_serve()
    secrets = [name for name in required if name in secret_settings()]
    return (
        "Run the relay and the HUD (settings from CRCR_* variables).\n\n"
        f"Required: {', '.join(required)}. Secrets ({', '.join(secrets)}) may instead "
        "name a file holding them: CRCR_<NAME>_FILE.\n\n"
        f"All {len(Settings.model_fields)} settings, with defaults and meanings: "
        f"{GUIDE_SETTINGS} (the operator guide's settings table)."
    )


def guide_rows(guide_text: str) -> dict[str, str]:
    """Each variable of the guide's settings table → its default cell."""
    rows: dict[str, str] = {}
    for line in guide_text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`CRCR_"):
            continue
        for name in re.findall(r"`(CRCR_\w+)`", cells[0]):
            rows[name] = cells[1]
    return rows


def missing_rows(guide_text: str) -> list[str]:
    """Table rows for the settings the guide lacks, meaning left for a person to write."""
    rows = guide_rows(guide_text)
    lines = []
    for field in Settings.model_fields:
        if variable(field) in rows:
            continue
        default = default_shown(field)
        shown = f"`{default}`" if default is not None else "unset"
        lines.append(f"| `{variable(field)}` | {shown} | WHAT IT DOES |")
    return lines
