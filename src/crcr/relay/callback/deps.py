"""What the callback endpoint needs from the rest of crcr, and its time budgets."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from crcr.config.settings import Settings
from crcr.oidc.claims import VerifiedIdentity
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.audit.trail import AuditTrail
from crcr.relay.callback.repository_ids import RepositoryIds
from crcr.relay.callback.self_report import CommitExists
from crcr.relay.jobs.events import JobHook
from crcr.relay.results.forwarder import HudForwarder
from crcr.reporter.post import REQUEST_TIMEOUT
from crcr.stores.roles import Caches, Deadlines, JobStates, RateLimiter
from crcr.stores.values import ClaimRef


class CallbackStore(JobStates, Deadlines, RateLimiter, Caches, Protocol):
    """The state store's roles this module uses."""


class TokenVerifier(Protocol):
    """`crcr.oidc.verifier.OidcVerifier`, or a stand-in with the same contract."""

    async def verify(self, authorization: str | None) -> VerifiedIdentity:
        """Return who the token speaks for, or raise `TokenRejected`."""


REPORTER_TIMEOUT = REQUEST_TIMEOUT
"""Seconds `crcr report` (and the reference action) waits for an answer by default.

A callback's own work is budgeted to end well inside it, whatever GitHub, the issuer or
the HUD are doing: a reporter that times out retries, and its retry is then answered
"duplicate" for a result the relay may still be handling.
"""

CHECK_BUDGET = 2.5
"""Seconds for steps 1-6 (body, token keys, allowlist, store, the self-report's commit).

Nothing is written before these end, so running out answers 503 and loses nothing.
"""

LOOKUP_BUDGET = 1.0
"""Seconds a self-report waits for GitHub to confirm its commit (else: unverified)."""

HOOK_BUDGET = 2.0
"""Seconds for all `on_accepted` hooks of one callback together."""

MAX_FORWARD_BUDGET = REPORTER_TIMEOUT - CHECK_BUDGET - HOOK_BUDGET - 0.5
"""The most of `CRCR_HUD_TIMEOUT` a callback waits for its HUD write (the sweeper's
retries get all of it): 5 s, so that the whole callback ends by ~9.5 s."""


@dataclass
class CallbackDeps:
    """Everything `callback_router` needs; built once by the app factory.

    `on_accepted` hooks run after the HUD write for every accepted job callback (never
    for duplicates, nor for self-reports, which move no job), within `hook_budget`
    seconds together; they should enqueue slow work (e.g. check runs) rather than do
    it inline, because the reporter is waiting.
    `rate_window` is SPEC §5 step 3's sliding minute (shorter only in tests). `audit`
    records every decision (SPEC §12). `oncall_claim` names the claim of a PR's oncall
    comment for a backend (`OncallNotifier.claim_of`): a completion's transition reads
    it in its own round trip and hands it to the hooks (`JobTransitioned.oncall_comment`).
    """

    store: CallbackStore
    verifier: TokenVerifier
    allowlist: Callable[[], Awaitable[Allowlist]]
    forwarder: HudForwarder
    settings: Settings
    commit_exists: CommitExists | None = None
    clock: Callable[[], float] = time.time
    on_accepted: list[JobHook] = field(default_factory=list)
    rate_window: float = 60.0
    check_budget: float = CHECK_BUDGET
    lookup_budget: float = LOOKUP_BUDGET
    forward_budget: float = MAX_FORWARD_BUDGET
    hook_budget: float = HOOK_BUDGET
    audit: AuditTrail | None = None
    oncall_claim: Callable[[int, str], ClaimRef] | None = None
    repository_ids: RepositoryIds = field(init=False)

    def __post_init__(self) -> None:
        self.repository_ids = RepositoryIds(self.store)
