"""Send the demo's logs to a file (the terminal is the live view's) and count the errors."""

from __future__ import annotations

import logging
from pathlib import Path

LOG_FILE = "demo.log"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class ErrorCounter(logging.Handler):
    """Counts records at ERROR and above, so the display can say something went wrong."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def capture_logs(data_dir: Path) -> tuple[ErrorCounter, list[logging.Handler]]:
    """Route every log record to `<data dir>/demo.log` at INFO; return the error counter."""
    file_handler = logging.FileHandler(data_dir / LOG_FILE, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter(_FORMAT))
    file_handler.setLevel(logging.INFO)
    counter = ErrorCounter()
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    # One line per HTTP request would bury everything else.
    for chatty in ("httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    handlers: list[logging.Handler] = [file_handler, counter]
    for handler in handlers:
        root.addHandler(handler)
    return counter, handlers


def release_logs(handlers: list[logging.Handler]) -> None:
    """Detach and close what `capture_logs` attached."""
    root = logging.getLogger()
    for handler in handlers:
        root.removeHandler(handler)
        handler.close()
