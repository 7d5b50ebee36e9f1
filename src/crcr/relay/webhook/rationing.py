"""What the fan-out asks of a hardware budget (SPEC §15), as the webhook sees it.

The webhook names only this shape; `crcr.relay.budgets.gate` fills it, so the budget
package may build on the fan-out without the two importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook.fanout import DispatchOutcome


class RationedTargets(Protocol):
    """One event's targets, split."""

    @property
    def send_now(self) -> list[str]:
        """Dispatched now, by the fan-out."""
        ...

    @property
    def waiting(self) -> list[str]:
        """Waiting for a slot of their backend's cap."""
        ...

    @property
    def skipped(self) -> list[str]:
        """Not dispatched: the PR touches none of their paths."""
        ...


class FanOutBudget(Protocol):
    """Called before the fan-out (which targets go now) and after it (what came of them)."""

    async def ration(
        self,
        *,
        delivery_id: str,
        context: UpstreamContext,
        client_payload: Mapping[str, Any],
        trimmed: bool,
        repos: Sequence[str],
    ) -> RationedTargets:
        """Split this event's targets."""
        ...

    async def settle(
        self, delivery_id: str, context: UpstreamContext, outcomes: Sequence[DispatchOutcome]
    ) -> None:
        """React to the fan-out's outcomes."""
        ...
