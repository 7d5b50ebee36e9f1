"""What hooks are handed when a job moves: `JobTransitioned`, and how hooks are run.

Both the callback (an accepted in_progress or completion) and the sweeper (a zombie
timed out, a lost completion redone) move jobs; the check publisher and the conclusion
confirmer react. The event carries the job as it now stands, so a hook needs no store
read to know what happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from crcr.relay.jobs.job import Job
from crcr.stores.values import ClaimRef

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimRead:
    """A claim's settled value (None: none) as read in the transition's own step."""

    claim: ClaimRef
    value: str | None


@dataclass(frozen=True)
class JobTransitioned:
    """A job moved to `job.state`: by a callback, or by the sweeper standing in for one."""

    job: Job
    hud_body: Mapping[str, Any]
    """The SPEC §6 body written (or queued) for the HUD row of this transition."""
    source: Literal["callback", "sweeper", "supersession"] = "callback"
    oncall_comment: ClaimRead | None = None
    """The job's PR's oncall comment claim as the callback's transition read it (every
    finished PR job asks whether its backend's oncalls were told), so a hook does not
    read it again; None where nobody read it."""


JobHook = Callable[[JobTransitioned], Awaitable[None]]


async def run_hooks(hooks: Sequence[JobHook], event: JobTransitioned, *, budget: float) -> None:
    """Run the hooks within `budget` seconds together; a failing hook is logged, never fatal.

    The job's state has already changed and the HUD has the row: failing the callback
    now would only make the reporter retry into a "duplicate". A hook that hangs is cut
    at the deadline; the hooks after it still run what they can do without waiting.
    One timeout covers the hooks until one is cut (a timeout per hook was 3 % of a
    callback's CPU).
    """
    deadline = asyncio.get_running_loop().time() + budget
    waiting = iter(hooks)
    hook: JobHook | None = None
    while True:
        try:
            async with asyncio.timeout_at(deadline):
                for hook in waiting:
                    try:
                        await hook(event)
                    except Exception:
                        _log_failure(hook, event)
                return
        except TimeoutError:
            if hook is not None:
                _log_failure(hook, event)


def _log_failure(hook: JobHook, event: JobTransitioned) -> None:
    log.exception(
        "on_accepted hook %s failed for job %s",
        getattr(hook, "__qualname__", repr(hook)),
        event.job.key,
    )
