"""The exit status of a graceful shutdown: 0, as process managers expect.

uvicorn shuts down gracefully on SIGTERM (stop accepting, finish the requests in flight
within `CRCR_SHUTDOWN_GRACE`, run the lifespan's shutdown), then raises the signal again
so that the process "dies of it" with the default handler: status 143, which systemd
and Kubernetes read as a failure. With this handler in place the re-raised signal ends
the process with status 0 instead; a SIGTERM that arrives before uvicorn takes over the
signals (during start-up) stops it at once, with status 0 too.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType


def _exit_zero(signum: int, frame: FrameType | None) -> None:
    sys.exit(0)


def exit_zero_on_sigterm() -> None:
    """Make SIGTERM end the process with status 0 wherever uvicorn is not handling it."""
    signal.signal(signal.SIGTERM, _exit_zero)
