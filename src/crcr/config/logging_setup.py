"""Where every `crcr` command's logs go: one configuration, `CRCR_LOG_LEVEL` and `CRCR_LOG_FORMAT`.

The root command applies it before any subcommand runs, so `crcr serve`, `crcr hud serve`,
`crcr sweep`, the demo and the rest log alike. uvicorn takes the same dictionary
(`uvicorn_log_config`) so its own lines, in every worker process, come out in the same
format; its access log is switched off in favour of crcr's (`crcr.web.access_log`), which
carries the duration. Standard library only: `crcr report` runs this too.
"""

from __future__ import annotations

import io
import logging
import logging.config
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from crcr.config.log_format import JsonFormatter

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


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_FRAME = "│╭╮╰╯─┃┏┓┗┛━ \t"
_JSON_LINE = '{"time":'
_WORDS_LEVEL = (("warning", logging.WARNING), ("note", logging.INFO))


class JsonStderr(io.TextIOBase):
    """stderr for a command in JSON log mode: every line it gets becomes a JSON log line.

    A log pipeline reading stderr must parse every line, but commands also write there
    directly: their one-line errors (`typer.echo(..., err=True)` in every component),
    click's usage errors and typer's framed error panels. Those arrive here as text and
    leave as JSON objects in the log's own shape (logger `crcr.cli`, level `error`, or
    `warning` / `info` for lines saying so); lines already JSON (the log handler's) pass
    through untouched, on a fast path since a request's access line comes this way.
    """

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self._pending = ""
        self._formatter = JsonFormatter()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.raw.fileno()

    def write(self, text: str) -> int:
        if not self._pending and text.startswith(_JSON_LINE) and text.endswith("\n"):
            self.raw.write(text)
            return len(text)
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._emit(line)
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def close_line(self) -> None:
        """Emit a last line that ended without a newline."""
        if self._pending:
            line, self._pending = self._pending, ""
            self._emit(line)
        self.flush()

    def _emit(self, line: str) -> None:
        if line.startswith(_JSON_LINE):
            self.raw.write(line + "\n")
            return
        message = _ANSI.sub("", line).strip(_FRAME)
        if not message:
            return  # a frame's border or an empty line carries nothing
        level = next(
            (lvl for word, lvl in _WORDS_LEVEL if message.lower().startswith(word)), logging.ERROR
        )
        record = logging.makeLogRecord(
            {"name": "crcr.cli", "levelno": level, "levelname": logging.getLevelName(level),
             "msg": message}
        )  # fmt: skip
        self.raw.write(self._formatter.format(record) + "\n")


def requested_format(argv: list[str], environ: Mapping[str, str]) -> str | None:
    """The log format a command line asks for explicitly, read before it is parsed.

    Usage errors (an unknown command or option) are written before the root command's
    options take effect, so `crcr` decides this first: `--log-format X` (or
    `--log-format=X`) before the command, else `CRCR_LOG_FORMAT`. None when neither is
    given: logs are then JSON into a pipe, but stderr is not rewritten, so a person
    piping a command still reads its errors as the one line of text they are; every
    deployment recipe (deploy/) sets `CRCR_LOG_FORMAT=json`.
    """
    for index, word in enumerate(argv):
        if word == "--log-format" and index + 1 < len(argv):
            return argv[index + 1].lower()
        if word.startswith("--log-format="):
            return word.partition("=")[2].lower()
        if not word.startswith("-"):
            break  # the subcommand: options after it are its own
    chosen = environ.get("CRCR_LOG_FORMAT")
    return chosen.lower() if chosen else None


def route_stderr_as_json() -> JsonStderr:
    """Replace `sys.stderr` with a `JsonStderr` over it (idempotent); returns it."""
    if isinstance(sys.stderr, JsonStderr):
        return sys.stderr
    wrapper = JsonStderr(sys.stderr)
    sys.stderr = wrapper
    return wrapper
