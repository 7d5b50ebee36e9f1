"""Logging put back as it was after each test (autouse, from `tests/conftest.py`).

The root command configures logging for the process (crcr.config.logging_setup); a test that
runs a command in process (Typer's CliRunner) must not leave crcr's handler and levels
behind for the tests after it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from crcr.config.logging_setup import ACCESS_LOGGER

_LOGGERS = ("crcr", "uvicorn", "uvicorn.error", "uvicorn.access", ACCESS_LOGGER)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Snapshot the root handlers and the levels `configure_logging` sets; restore them."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    loggers = {name: logging.getLogger(name) for name in _LOGGERS}
    saved = {name: (lg.level, list(lg.handlers), lg.propagate) for name, lg in loggers.items()}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, (lg_level, lg_handlers, propagate) in saved.items():
        loggers[name].setLevel(lg_level)
        loggers[name].handlers[:] = lg_handlers
        loggers[name].propagate = propagate
