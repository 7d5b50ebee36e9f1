"""Where every `crcr` command's logs go: one configuration, `CRCR_LOG_LEVEL` and `CRCR_LOG_FORMAT`.

The root command applies it before any subcommand runs, so `crcr serve`, `crcr hud serve`,
`crcr sweep`, the demo and the rest log alike. uvicorn takes the same dictionary
(`uvicorn_log_config`) so its own lines, in every worker process, come out in the same
format; its access log is switched off in favour of crcr's (`crcr.web.access_log`), which
carries the duration. Standard library only: `crcr report` runs this too.
"""

from __future__ import annotations

import logging
import logging.config
import os
import sys
from typing import Any, TextIO

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
LOG_FORMATS = ("json", "text")
ACCESS_LOGGER = "crcr.access"
TERMINAL_HANDLER = "crcr-stderr"
"""The name of the handler writing to stderr, for the demo to set aside while it draws."""

# crcr's own loggers and uvicorn's take the chosen level; everything else (httpx,
# SQLAlchemy, …) shows warnings and above, through the same handler and format.
_OURS = ("crcr", "uvicorn", "uvicorn.error")

_FORMATTERS = {
    "json": "crcr.config.log_format.JsonFormatter",
    "text": "crcr.config.log_format.TextFormatter",
}


def default_format(stream: TextIO | None = None) -> str:
    """`text` for a person at a terminal, `json` for a log pipeline."""
    stream = stream if stream is not None else sys.stderr
    return "text" if stream.isatty() else "json"


def log_config(
    level: str = "info", fmt: str | None = None, *, access_log: bool = True
) -> dict[str, Any]:
    """The `logging.config.dictConfig` dictionary for this level and format.

    `access_log=False` keeps `crcr.access` at WARNING: no line per request.
    """
    level = level.lower()
    if level not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    fmt = (fmt or default_format()).lower()
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not {fmt!r}")
    upper = level.upper()
    loggers: dict[str, Any] = {name: {"level": upper, "propagate": True} for name in _OURS}
    loggers[ACCESS_LOGGER] = {"level": upper if access_log else "WARNING", "propagate": True}
    # uvicorn's access log is replaced by crcr's: its lines have no duration and one string.
    loggers["uvicorn.access"] = {"level": "WARNING", "handlers": [], "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"crcr": {"()": _FORMATTERS[fmt]}},
        "handlers": {
            TERMINAL_HANDLER: {
                "class": "logging.StreamHandler",
                "formatter": "crcr",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": "WARNING", "handlers": [TERMINAL_HANDLER]},
        "loggers": loggers,
    }


_applied = {"level": "info", "format": ""}


def configure_logging(
    level: str = "info", fmt: str | None = None, *, access_log: bool = True
) -> None:
    """Apply `log_config` to this process, replacing handlers set up before."""
    logging.config.dictConfig(log_config(level, fmt, access_log=access_log))
    _applied.update(level=level.lower(), format=(fmt or default_format()).lower())


def applied() -> tuple[str, str]:
    """The level and format `configure_logging` last applied."""
    return _applied["level"], _applied["format"] or default_format()


def uvicorn_log_config(*, access_log: bool) -> dict[str, Any]:
    """What `uvicorn.run(log_config=...)` takes: the configuration applied, for every worker.

    Worker processes build the app from the environment
    (`crcr.app.create_app_from_environment`), so options given on the command line are
    passed to them there as well.
    """
    level, fmt = applied()
    os.environ.update(
        CRCR_LOG_LEVEL=level,
        CRCR_LOG_FORMAT=fmt,
        CRCR_ACCESS_LOG="true" if access_log else "false",
    )
    return log_config(level, fmt, access_log=access_log)
