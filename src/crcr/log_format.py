"""Structured (JSON lines) logs for `crcr serve`, carrying each record's context fields.

Modules log with `extra={"delivery_id": ..., "repo": ...}`; this formatter puts those
fields into the JSON object, so a log pipeline can follow one delivery across the fan-out.
Values that look like credentials are never logged in the first place; as a last guard,
fields whose names suggest a secret are masked.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

_STANDARD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
_SECRET_NAMES = ("token", "secret", "authorization", "password", "private_key")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, context, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name in _STANDARD_ATTRIBUTES or name.startswith("_"):
                continue
            masked = any(part in name.lower() for part in _SECRET_NAMES)
            entry[name] = "**********" if masked else value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_json_logging(level: int = logging.INFO) -> None:
    """Send crcr's and uvicorn's logs to stderr as JSON lines."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    for name in ("crcr", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        if name == "uvicorn.access" and not logger.hasHandlers():
            continue  # `crcr serve --no-access-log`: uvicorn switched it off, keep it so
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
