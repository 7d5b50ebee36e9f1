"""The leader's A/A pairs (SPEC §14): one upstream SHA dispatched twice to each L3+ backend.

Every `CRCR_AA_INTERVAL` seconds (0: never) each backend at L3 or L4 gets two `crcr_aa`
dispatches of the upstream default branch's latest commit, delivery ids
`crcr-aa-<pair>-1` and `-2`. Their results are bound and recorded like any other; two
that disagree are the backend's own noise, which the level status shows beside its
criteria (`hud/levels/noise.py`). They never count toward a backend's state or levels.

The interval is cut into numbered slots of the clock; each slot's pairs are claimed
once in the state store, so any number of instances send one pair per backend per slot.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import quote

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubError
from crcr.relay.allowlist.model import Allowlist, Level
from crcr.relay.culprits.dispatches import push_payload, send_commit
from crcr.relay.webhook.fanout import DispatchOutcome, FanOut
from crcr.stores.roles import Idempotency

log = logging.getLogger(__name__)

AA_EVENT = "crcr_aa"
DELIVERY_PREFIX = "crcr-aa-"
CLAIM_PREFIX = "culprits:aa:"


@dataclass
class AaSender:
    """Send each L3+ backend one A/A pair per slot of `interval` seconds."""

    store: Idempotency
    fanout: FanOut
    github: GitHubClient
    allowlist: Callable[[], Awaitable[Allowlist]]
    upstream_repo: str
    interval: float
    clock: Callable[[], float] = time.time

    async def __call__(self) -> None:
        """The sweeper's leader step: `send`."""
        await self.send()

    async def send(self) -> list[DispatchOutcome]:
        """Send this slot's pairs if no instance has; what happened to each dispatch."""
        if self.interval <= 0:
            return []
        slot = int(self.clock() // self.interval)
        if not await self.store.claim_once(f"{CLAIM_PREFIX}{slot}", math.ceil(self.interval) + 60):
            return []
        targets = [e.repo for e in (await self.allowlist()).entries if e.level >= Level.L3]
        if not targets:
            return []
        try:
            repository = await self.github.get_repo(self.upstream_repo)
            branch = str(repository.get("default_branch") or "main")
            answer = await self.github.repo_request(
                "GET", self.upstream_repo, "/commits/" + quote(branch, safe="")
            )
            sha = str(answer.json()["sha"]).lower()
        except (GitHubError, KeyError, ValueError) as exc:
            log.warning(
                "no A/A pairs this interval: the upstream's latest commit is unknown: %s", exc
            )
            return []
        payload = push_payload(repository, sha, parent=None)
        outcomes = []
        for repo in targets:
            pair = f"{DELIVERY_PREFIX}{uuid.uuid4().hex}"
            for run in (1, 2):
                outcomes.append(
                    await send_commit(
                        self.fanout,
                        event_type=AA_EVENT,
                        delivery_id=f"{pair}-{run}",
                        upstream_repo=self.upstream_repo,
                        repo=repo,
                        payload=payload,
                        extra={"aa": {"pair": pair, "run": run}},
                    )
                )
        log.info("A/A pairs of %s sent to %d backend(s)", sha, len(targets))
        return outcomes
