"""Reading what a crcr process logged as JSON (its format when stderr is not a terminal)."""

from __future__ import annotations

import json
from typing import Any


def entries_at(log_text: str, level: str) -> list[dict[str, Any]]:
    """The JSON log entries at `level` ("error", "warning", ...), in order.

    Parsed rather than searched for: the formatter writes compact JSON, and a test that
    searched for `"level": "error"` (with a space) once passed whatever was logged.
    Lines that are not JSON objects (a traceback uvicorn printed itself) are skipped.
    """
    found = []
    for line in log_text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("level") == level:
            found.append(entry)
    return found
