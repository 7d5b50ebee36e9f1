"""Send the demo's logs to a file (the terminal is the live view's) and count the errors.

The file takes the format `CRCR_LOG_FORMAT` chose for the terminal (crcr.config.logging_setup),
and the terminal's handler is detached while the live view runs.
"""

from __future__ import annotations

import logging
from pathlib import Path

from crcr.config.logging_setup import ACCESS_LOGGER, TERMINAL_HANDLER

LOG_FILE = "demo.log"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Detached(logging.Handler):
    """Stands in the handler list for the terminal handlers set aside while capturing."""

    def __init__(self, handlers: list[logging.Handler]) -> None:
        super().__init__(level=logging.CRITICAL + 1)
        self.handlers = handlers

    def emit(self, record: logging.LogRecord) -> None:
        """Never called: its level is above every record's."""


class ErrorCounter(logging.Handler):
    """Counts records at ERROR and above, so the display can say something went wrong."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def capture_logs(data_dir: Path) -> tuple[ErrorCounter, list[logging.Handler]]:
    """Route every log record to `<data dir>/demo.log` at INFO; return the error counter."""
    root = logging.getLogger()
    terminal = [h for h in root.handlers if h.name == TERMINAL_HANDLER]
    for handler in terminal:
        root.removeHandler(handler)
    configured = next((h.formatter for h in terminal if h.formatter is not None), None)
    file_handler = logging.FileHandler(data_dir / LOG_FILE, encoding="utf-8")
    file_handler.setFormatter(configured or logging.Formatter(_FORMAT))
    file_handler.setLevel(logging.INFO)
    counter = ErrorCounter()
    root.setLevel(logging.INFO)
    # One line per HTTP request would bury everything else.
    for chatty in ("httpx", "httpcore", ACCESS_LOGGER):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    handlers: list[logging.Handler] = [file_handler, counter]
    for handler in handlers:
        root.addHandler(handler)
    return counter, [*handlers, _Detached(terminal)]


def release_logs(handlers: list[logging.Handler]) -> None:
    """Detach and close what `capture_logs` attached."""
    root = logging.getLogger()
    for handler in handlers:
        root.removeHandler(handler)
        handler.close()
        if isinstance(handler, _Detached):
            for terminal in handler.handlers:
                root.addHandler(terminal)
