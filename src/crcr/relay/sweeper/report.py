"""What one sweeper pass did, for the CLI, the logs and the tests."""

from __future__ import annotations

from dataclasses import dataclass, field

from crcr.relay.jobs.queue_handler import HandlerResult


@dataclass
class SweepReport:
    """What one pass did."""

    led: bool = False  # whether this pass did the leader's work (overdue jobs, level syncs)
    zombies_finalised: int = 0
    completions_redone: int = 0
    jobs_failed: int = 0
    handled: dict[str, dict[str, int]] = field(default_factory=dict)
    cut_short: str | None = None  # why work was left for the next pass, if it was
    resting: list[str] = field(default_factory=list)  # queues whose probe failed
    waiting: int = 0  # items left in the queues after the pass

    def count(self, queue: str, result: HandlerResult) -> None:
        """Count one handled item."""
        per_queue = self.handled.setdefault(queue, {})
        per_queue[str(result)] = per_queue.get(str(result), 0) + 1
