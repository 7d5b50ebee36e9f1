"""The latest health verdict, kept for the header chip every page draws (SPEC §13).

Every page links the health page with a Healthy/Degraded chip, but drawing a page must
not wait for the health document (audit reads, one query per backend). So pages show
the verdict last computed — by the health page, the API, or a refresh this memo starts
in the background once the verdict is older than `max_age` — and the health page and
API always compute afresh.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from crcr.hud.health.canary import CanaryStatus
from crcr.hud.health.report import HealthReport

log = logging.getLogger(__name__)

MAX_AGE = 30.0

AlertsSource = Callable[[int], Awaitable[list[dict[str, Any]]]]
"""The last `n` alerts raised, newest first (the relay's alert log, SPEC §13)."""


class HealthMemo:
    """A health document source, and the status it last gave."""

    def __init__(
        self,
        report: Callable[[], Awaitable[HealthReport]],
        *,
        max_age: float = MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
        alerts: AlertsSource | None = None,
    ) -> None:
        self._report = report
        self.alerts = alerts
        """The alert log for the alerts page; None: this relay keeps none to show."""
        self._max_age = max_age
        self._clock = clock
        self._status: CanaryStatus | None = None
        self._at = float("-inf")
        self._refreshing: asyncio.Task[HealthReport | None] | None = None

    async def fresh(self) -> HealthReport:
        """The document as of now; its status becomes the known one."""
        report = await self._report()
        self._status, self._at = report.status, self._clock()
        return report

    def known_status(self) -> CanaryStatus | None:
        """The last status computed (None: not yet); starts a refresh when it is old."""
        old = self._clock() - self._at > self._max_age
        if old and (self._refreshing is None or self._refreshing.done()):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop: a page drawn outside a server (tests, tools)
                return self._status
            self._refreshing = loop.create_task(self._refresh())
        return self._status

    async def _refresh(self) -> HealthReport | None:
        try:
            return await self.fresh()
        except Exception:  # the chip keeps its last status; the health page shows the error
            log.warning("health refresh for the page header failed", exc_info=True)
            return None
