"""Nightly and periodic self-reports (SPEC §5 step 5): no dispatch, no state machine.

The tested upstream SHA travels in `delivery_id`. It must look like a commit and exist
upstream; when GitHub cannot be asked, the report is kept and marked unverified rather
than lost, because a nightly result is still worth showing.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from crcr.relay.callback.schema import CallbackBody
from crcr.relay.jobs.lifecycle import ReportedStatus
from crcr.stores.roles import Caches, RateLimiter
from crcr.stores.state import StateStoreUnavailable
from crcr.web.refusal import Invalid, RateLimited


class SelfReportStore(Caches, RateLimiter, Protocol):
    """The state store's roles this module uses."""


log = logging.getLogger(__name__)

CommitExists = Callable[[str, str], Awaitable[bool]]

SHA_PATTERN = re.compile(r"[0-9a-fA-F]{7,40}")
CACHE_NAMESPACE = "upstream_commit"
# A commit never disappears, so "exists" is kept long; "missing" briefly, since a
# report may race the push that creates the commit.
FOUND_TTL = 7 * 24 * 3600
MISSING_TTL = 300
LOOKUP_WINDOW = 3600.0
"""The window of `CRCR_SELF_REPORT_LOOKUPS_PER_HOUR`: each new SHA costs the App a request."""


MAX_SELF_REPORTS_PER_COMMIT_DAY = 200
"""Self-reports one repository may send for one commit in one UTC day. Each new workflow
or job name is a new HUD row, and the per-repo rate alone allowed ~144k a day; a
backend's nightly matrix has tens of jobs, and a re-run reports each again."""
DAY = 24 * 3600


def check_self_report(body: CallbackBody) -> str:
    """Return the tested SHA (lower case) or raise `Invalid` (400)."""
    if body.workflow.status is not ReportedStatus.COMPLETED:
        raise Invalid(f"workflow.status: {body.event_type} self-reports must be completed")
    if not SHA_PATTERN.fullmatch(body.delivery_id):
        raise Invalid("delivery_id: must be the tested upstream commit SHA (7-40 hex characters)")
    return body.delivery_id.lower()


async def commit_verified(
    store: SelfReportStore,
    commit_exists: CommitExists | None,
    upstream_repo: str,
    sha: str,
    *,
    within: float,
    reporter: str = "",
    lookups_per_hour: int | None = None,
) -> bool:
    """True when the commit exists upstream, False when GitHub could not be asked.

    GitHub gets `within` seconds: the reporter is waiting, and an unverified row is
    better than a reporter that times out. Raises `Invalid` (400) when GitHub
    says the commit does not exist. Answers are cached, "missing" too; a `reporter`
    whose uncached SHAs cost more than `lookups_per_hour` requests of the App's quota
    in the last hour is refused 429 (its invented SHAs would spend everyone's quota).
    """
    key = f"{upstream_repo.lower()}@{sha}"
    cached = await store.cache_get(CACHE_NAMESPACE, key)
    if cached is None and commit_exists is not None and lookups_per_hour is not None:
        budget = await store.hit_rate_limit(
            f"commit-lookup:{reporter.lower()}", lookups_per_hour, LOOKUP_WINDOW
        )
        if not budget.allowed:
            raise RateLimited(
                f"delivery_id: more than {lookups_per_hour} new commits to look up this hour "
                "(CRCR_SELF_REPORT_LOOKUPS_PER_HOUR); report commits that exist upstream",
                retry_after=max(1, budget.retry_after),
            )
    if cached is None and commit_exists is not None:
        try:
            async with asyncio.timeout(within):
                exists = await commit_exists(upstream_repo, sha)
        except StateStoreUnavailable:
            raise
        except Exception as exc:
            log.warning("cannot check commit %s upstream: %s", sha, type(exc).__name__)
            return False
        cached = "1" if exists else "0"
        await store.cache_set(CACHE_NAMESPACE, key, cached, FOUND_TTL if exists else MISSING_TTL)
    if cached == "0":
        raise Invalid(f"delivery_id: commit {sha} does not exist in {upstream_repo}")
    return cached == "1"


async def count_self_report(store: RateLimiter, reporter: str, sha: str, now: float) -> None:
    """Bound the rows a repository's self-reports add for one commit in one UTC day.

    Counted as they arrive (a repeat counts again, which only tightens the bound);
    refusals are not counted. Answered 400: waiting would not help before tomorrow.
    """
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    limit = MAX_SELF_REPORTS_PER_COMMIT_DAY
    decision = await store.hit_rate_limit(
        f"self-reports:{reporter.lower()}:{sha}:{day}", limit, DAY
    )
    if not decision.allowed:
        raise Invalid(
            f"delivery_id: more than {limit} nightly/periodic reports for commit {sha} "
            "today from this repository"
        )
