"""Ask GitHub how an Actions job really ended, through the `confirm` queue (SPEC §11).

Never on the callback's path: the job's `completed` report is sent by one of the job's
own steps, so when it arrives GitHub still has the job running. Each accepted
completion of a GitHub Actions job queues one item, first tried `CONFIRM_DELAY`
seconds later and again with the sweeper's backoff until GitHub says the job ended
(or `MAX_ATTEMPTS` pass). The answer updates the HUD row; a reported success that
GitHub contradicts re-creates an L3/L4 check run as a failure that says why.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubError, GitHubForbidden, GitHubNotFound
from crcr.relay.allowlist.model import Level
from crcr.relay.checks.confirmation import confirm, confirmed_body
from crcr.relay.checks.notes_source import CONTRADICTIONS
from crcr.relay.jobs.events import JobTransitioned
from crcr.relay.jobs.lifecycle import JobState
from crcr.relay.jobs.queue_handler import HandlerResult, QueueHandler
from crcr.relay.results.body import iso_utc
from crcr.relay.results.forwarder import Delivery, HudForwarder
from crcr.stores.roles import Caches, RetryQueue
from crcr.stores.state import LeasedItem


class ConfirmerStore(Caches, RetryQueue, Protocol):
    """The state store's roles this module uses."""


log = logging.getLogger(__name__)

CONFIRM_QUEUE = "confirm"
CONFIRM_DELAY = 10.0
"""Seconds before the first question: the job's last steps usually end by then."""
MAX_ATTEMPTS = 12
"""With the sweeper's backoff (5 s doubling, jittered) 30 to 60 minutes of asking."""

Republish = Callable[[str, str], Awaitable[None]]


class ConclusionConfirmer:
    """The callback hook that queues a confirmation, and the queue's handler."""

    def __init__(
        self,
        store: ConfirmerStore,
        github: GitHubClient,
        forwarder: HudForwarder,
        *,
        republish: Republish | None,
        ttl: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._github = github
        self._forwarder = forwarder
        self._republish = republish
        self._ttl = ttl
        self._clock = clock
        self.delay = CONFIRM_DELAY

    @property
    def queue_handlers(self) -> dict[str, QueueHandler]:
        """What the sweeper drains for this component."""
        return {CONFIRM_QUEUE: self.handle_item}

    async def on_accepted(self, event: JobTransitioned) -> None:
        """Queue a confirmation for an accepted completion of a GitHub Actions job.

        Also a hook of the sweeper's, for a completion whose relay died before its hooks
        ran; a job the sweeper timed out reported no conclusion to confirm.
        """
        job = event.job
        if (
            job.state is not JobState.COMPLETED
            or job.issuer_kind != "github"
            or job.level < Level.L2
        ):
            return
        run = job.run
        job_id = run.check_run_id or ""
        if not job_id.isdigit():
            return
        payload = {
            "job_key": job.key,
            "repo": job.verified_repo,
            "job_id": int(job_id),
            "reported": run.reported_conclusion,
            "level": str(job.level),
            "hud_body": dict(event.hud_body),
        }
        await self._store.enqueue(CONFIRM_QUEUE, f"{job.key}:confirm", payload, delay=self.delay)

    async def handle_item(self, item: LeasedItem) -> HandlerResult:
        """Ask GitHub once; retry while the job runs or GitHub is unwell."""
        payload = item.payload
        repo, job_id = str(payload["repo"]), int(payload["job_id"])
        try:
            job = await self._github.get_actions_job(repo, job_id, max_retries=1)
        except GitHubNotFound:
            log.info("GitHub has no job %s in %s; its conclusion stays unconfirmed", job_id, repo)
            return HandlerResult.DONE
        except GitHubForbidden as exc:
            # The App lacks the Actions permission there: asking again will not help.
            log.warning("cannot read job %s in %s (%s); left unconfirmed", job_id, repo, exc)
            return HandlerResult.DONE
        except GitHubError as exc:
            log.warning("asking GitHub for job %s in %s failed, will retry: %s", job_id, repo, exc)
            return HandlerResult.RETRY
        confirmation = confirm(payload.get("reported"), job)
        if confirmation is None:
            if item.attempts + 1 >= MAX_ATTEMPTS:
                log.info("job %s in %s never finished on GitHub; left unconfirmed", job_id, repo)
                return HandlerResult.DONE
            return HandlerResult.RETRY
        update = confirmed_body(
            payload["hud_body"], confirmation, checked_at=iso_utc(self._clock())
        )
        result = await self._forwarder.forward(update)
        if result.delivery is Delivery.REJECTED:
            log.warning("the HUD refused job %s's confirmation: %s", job_id, result.message)
        if confirmation.confirmed is False:
            log.warning(
                "job %s in %s reported %s, GitHub says %s",
                job_id,
                repo,
                payload.get("reported"),
                confirmation.github_conclusion,
            )
        if confirmation.contradicts_success and payload.get("reported") == "success":
            key = str(payload["job_key"])
            github_conclusion = str(confirmation.github_conclusion)
            await self._store.cache_set(CONTRADICTIONS, key, github_conclusion, self._ttl)
            if self._republish is not None and Level[str(payload["level"])] >= Level.L3:
                await self._republish(key, "contradicted")
        return HandlerResult.DONE
