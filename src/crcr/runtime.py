"""The live parts of one relay instance, opened at start-up and closed at shutdown.

`crcr serve`, the demo and the tests all build their app from a `Runtime`, so the
wiring between components (state store, GitHub client, allowlist, HUD, verifier,
forwarder, sweeper) lives in this one place.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import httpx

from crcr.config.settings import Settings
from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound, GitHubUnprocessable
from crcr.github.factory import github_client_from_settings
from crcr.hud.component import Hud, open_hud
from crcr.hud.health.memo import HealthMemo
from crcr.oidc.verifier import OidcVerifier
from crcr.relay.alerts.issues import ISSUE_QUEUE, IssueSink, issue_queue_handler
from crcr.relay.alerts.sinks import ALERT_QUEUE, AlertSinks, alert_queue_handler
from crcr.relay.alerts.watch import AlertWatch, recent_alerts
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.allowlist.revocation import push_hook
from crcr.relay.allowlist.source import AllowlistSource
from crcr.relay.audit.trail import AuditTrail
from crcr.relay.budgets.board import BudgetBoard
from crcr.relay.budgets.buttons import Buttons
from crcr.relay.budgets.cap import DispatchCap
from crcr.relay.budgets.gate import BudgetGate
from crcr.relay.budgets.merge_queue import MergeQueue
from crcr.relay.budgets.skip_notice import http_notice, in_process_notice
from crcr.relay.budgets.supersession import Supersession
from crcr.relay.callback.deps import HOOK_BUDGET, MAX_FORWARD_BUDGET, CallbackDeps
from crcr.relay.checks.confirmer import ConclusionConfirmer
from crcr.relay.checks.publisher import CheckPublisher
from crcr.relay.culprits.aa import AaSender
from crcr.relay.culprits.finder import CulpritFinder
from crcr.relay.culprits.wiring import culprit_finder
from crcr.relay.health.assemble import HealthAssembler
from crcr.relay.health.probes import ProbeSender
from crcr.relay.levels.book import DemotionBook
from crcr.relay.levels.governance import LevelGovernance
from crcr.relay.levels.refresh import LevelRefresh
from crcr.relay.levels.standings import StandingsForHud, allowlist_levels
from crcr.relay.levels.wiring import level_governance, level_refresh, level_sync, status_source
from crcr.relay.results.forwarder import HudForwarder, forwarder_from_settings
from crcr.relay.sweeper.sweeper import BackgroundSweeper, Sweeper
from crcr.relay.webhook.endpoint import WebhookDeps
from crcr.relay.webhook.fanout import DISPATCH_QUEUE, FanOut, SendDispatch, dispatch_queue_handler
from crcr.relay.webhook.reruns import Rerunner
from crcr.stores.roles.pull_heads import RECOVERY_PREFIX
from crcr.stores.state import StateStore

HTTP_LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=50)


def is_permanent_dispatch_failure(exc: Exception) -> bool:
    """404 (the App is not installed there) and 422 (GitHub refused the body) never heal."""
    return isinstance(exc, GitHubNotFound | GitHubUnprocessable)


@dataclass
class Runtime:
    """Everything the relay's routes and background tasks share."""

    settings: Settings
    store: StateStore
    http: httpx.AsyncClient
    github: GitHubClient
    allowlist: Callable[[], Awaitable[Allowlist]]
    hud: Hud | None
    forwarder: HudForwarder
    fanout: FanOut
    webhook: WebhookDeps
    callback: CallbackDeps
    sweeper: Sweeper
    checks: CheckPublisher | None = None
    confirmer: ConclusionConfirmer | None = None
    demotions: DemotionBook | None = None
    levels: LevelRefresh | None = None
    governance: LevelGovernance | None = None
    audit: AuditTrail | None = None
    health: HealthAssembler | None = None
    health_memo: HealthMemo | None = None
    alerts: AlertWatch | None = None
    probes: ProbeSender | None = None
    culprits: CulpritFinder | None = None
    aa: AaSender | None = None
    budget_board: BudgetBoard | None = None
    supersession: Supersession | None = None
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    _background: BackgroundSweeper | None = None

    def start_background(self, interval: float = 15.0) -> None:
        """Run the sweeper (zombies, retry queues) while the app serves."""
        self._background = BackgroundSweeper(self.sweeper, interval=interval)
        self._background.start()

    async def close(self) -> None:
        """Stop background work (items in flight get `CRCR_SHUTDOWN_GRACE` seconds, then
        their leases are handed back; the sweeper lock is given up), then release what
        was opened, newest first."""
        if self._background is not None:
            await self._background.stop(grace=self.settings.shutdown_grace)
        for closer in reversed(self._closers):
            with contextlib.suppress(Exception):
                await closer()


async def open_runtime(
    settings: Settings,
    *,
    store: StateStore | None = None,
    github: GitHubClient | None = None,
    http: httpx.AsyncClient | None = None,
    clock: Callable[[], float] = time.time,
) -> Runtime:
    """Open every component the settings call for.

    A test or the demo may pass objects it already holds (a store, a GitHub client bound
    to the sandbox, an HTTP client for JWKS and the HUD); what is passed in is not closed.
    `clock` is the jobs' time (epoch seconds) for the callback, the sweeper and the check
    runs alike, so a test can move it past a deadline for all of them at once.
    """
    from crcr.stores.factory import open_state_store

    closers: list[Callable[[], Awaitable[None]]] = []
    if store is None:
        store = await open_state_store(settings)
        closers.append(store.close)
    if http is None:
        http = httpx.AsyncClient(limits=HTTP_LIMITS, timeout=settings.github_timeout)
        closers.append(http.aclose)
    if github is None:
        github = github_client_from_settings(settings, store)
        closers.append(github.aclose)
    source = AllowlistSource.from_settings(
        settings, store, fetch_contents=github.get_contents, http=http
    )
    closers.append(source.aclose)
    demotions = DemotionBook(store)
    audit = AuditTrail(
        store, keep_days=settings.audit_days, keep_per_repo=settings.audit_max_per_repo
    )
    closers.append(audit.aclose)  # after every component that records to it has closed
    hud = None
    if not settings.hud_url:
        hud = await open_hud(
            settings,
            level_lookup=allowlist_levels(source.get),
            governance_lookup=StandingsForHud(demotions, source.get),
        )
        closers.append(hud.close)
    forwarder = forwarder_from_settings(settings, store, ingestor=hud.ingestor if hud else None)
    closers.append(forwarder.aclose)
    fanout = FanOut(
        store=store,
        send=_sender(github, IN_REQUEST_RETRIES),
        is_permanent=is_permanent_dispatch_failure,
        record_ttl=settings.status_ttl,
        concurrency=settings.dispatch_concurrency,
        audit=audit,
    )
    checks = CheckPublisher(
        store=store,
        github=github,
        allowlist=source.get,
        settings=settings,
        levels=demotions,
        baseline=hud,
        audit=audit,
        clock=clock,
    )
    confirmer = ConclusionConfirmer(
        store, github, forwarder, republish=checks.republish, ttl=settings.status_ttl, clock=clock
    )
    levels = level_refresh(
        settings,
        store=store,
        book=demotions,
        status=status_source(settings, http, hud.level_status if hud else None),
        allowlist=source.get,
        sync=level_sync(github, source.location, demotions),
    )
    governance = level_governance(settings, demotions, audit, source.location)
    cap = DispatchCap(
        store, fanout, source.get, hold_for=settings.zombie_timeout, ttl=settings.status_ttl
    )
    merge_queue = MergeQueue(
        store,
        github,
        settings.upstream_repo,
        deadline=settings.merge_queue_deadline,
        ttl=settings.status_ttl,
        clock=clock,
    )
    gate = BudgetGate.on_github(cap, source.get, github)
    gate.merge_queue = merge_queue
    if hud is not None:
        gate.skips_seen = in_process_notice(hud.ingestor.record_path_skips)
    elif settings.hud_url:
        token = settings.hud_token.get_secret_value() if settings.hud_token else None
        gate.skips_seen = http_notice(http, settings.hud_url, token, settings.hud_timeout)
    supersession = Supersession(
        store,
        fanout,
        forwarder,
        record_ttl=settings.status_ttl,
        hook_budget=HOOK_BUDGET,
        hooks=[checks.on_accepted, cap.on_job],
        leave_cap=cap.leave,
        clock=clock,
    )
    rerunner = Rerunner(github, source.get, settings.upstream_repo)
    buttons = Buttons(rerunner.handle, store, settings.upstream_repo, clock=clock)
    checks.oncall.snoozed = buttons.snoozed
    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else ""
    webhook = WebhookDeps(
        secret=secret.encode(),
        upstream_repo=settings.upstream_repo,
        push_branches=settings.push_branches,
        record_ttl=settings.status_ttl,
        allowlist=source.get,
        fanout=fanout,
        flags=store,
        backfill_checks=checks.backfill,
        rerequest=buttons.handle,
        allowlist_pushed=push_hook(source, settings.upstream_repo),
        pull_request_seen=governance.pull_request_seen,
        budget=gate,
        merge_group_seen=merge_queue.destroyed,
        head_dispatched=supersession.dispatched,
    )
    callback = CallbackDeps(
        store=store,
        verifier=OidcVerifier.from_settings(settings, store, http),
        allowlist=source.get,
        forwarder=forwarder,
        settings=settings,
        # One attempt: the reporter is waiting (LOOKUP_BUDGET), and a report GitHub
        # could not confirm is kept, marked unverified.
        commit_exists=functools.partial(github.commit_exists, max_retries=0),
        on_accepted=[checks.on_accepted, confirmer.on_accepted, cap.on_job, merge_queue.on_job],
        forward_budget=min(settings.hud_timeout, MAX_FORWARD_BUDGET),
        audit=audit,
        clock=clock,
        oncall_claim=checks.oncall.claim_of,
    )
    probes = ProbeSender(
        store,
        fanout,
        source.get,
        settings.upstream_repo,
        settings.canary_repo,
        settings.canary_interval,
    )
    health = HealthAssembler(store, hud.engine, settings, source.get) if hud else None
    health_memo = (
        HealthMemo(health.report, alerts=functools.partial(recent_alerts, store))
        if health
        else None
    )
    if health is not None and levels.sync is not None:  # stale 28 days → L1 (SPEC §13)
        levels.sync.abandoned = health.abandoned
    sinks = AlertSinks.from_settings(settings)
    # The queue is in no hurry: redeliveries use the client's full retry schedule.
    redelivery = replace(fanout, send=_sender(github, None), still_listed=_listed(source))
    sweeper = Sweeper(
        store,
        forwarder,
        settings,
        queue_handlers={
            DISPATCH_QUEUE: dispatch_queue_handler(redelivery),
            **checks.queue_handlers,
            **confirmer.queue_handlers,
            ALERT_QUEUE: alert_queue_handler(sinks, http),
            ISSUE_QUEUE: issue_queue_handler(
                IssueSink(github, settings.upstream_repo, source.get, store)
            ),
        },
        on_finalised=[checks.on_accepted, confirmer.on_accepted, cap.on_job, merge_queue.on_job],
        deadline_handlers={
            **checks.deadline_handlers,
            **merge_queue.deadline_handlers,
            RECOVERY_PREFIX: supersession.recover,
        },
        extra_steps=[levels, probes, cap.refill],
        # Dispatches to different repositories do not depend on one another's order.
        parallel={DISPATCH_QUEUE: DISPATCH_PARALLEL},
        clock=clock,
        supersede=supersession.finalise_overdue,
    )
    forwarder.on_queued = sweeper.nudge
    cap.nudge = sweeper.nudge
    alerts = None
    if health_memo is not None:
        alerts = AlertWatch(
            store,
            health_memo,
            sinks,
            sweeper.instance_id,
            settings.hud_public_url,
            settings.audit_days,
            settings.audit_max_per_repo,
        )
        sweeper.extra_steps.append(alerts)
    aa = AaSender(
        store, fanout, github, source.get, settings.upstream_repo, settings.aa_interval, clock
    )
    sweeper.extra_steps.append(aa)
    culprits = None
    if hud is not None and health_memo is not None:
        culprits = culprit_finder(
            settings,
            store=store,
            engine=hud.engine,
            memo=health_memo,
            fanout=fanout,
            github=github,
            allowlist=source.get,
            instance=sweeper.instance_id,
            clock=clock,
        )
        sweeper.extra_steps.append(culprits)
    return Runtime(
        settings=settings,
        store=store,
        http=http,
        github=github,
        allowlist=source.get,
        hud=hud,
        forwarder=forwarder,
        fanout=fanout,
        webhook=webhook,
        callback=callback,
        sweeper=sweeper,
        checks=checks,
        confirmer=confirmer,
        demotions=demotions,
        levels=levels,
        governance=governance,
        audit=audit,
        health=health,
        health_memo=health_memo,
        alerts=alerts,
        probes=probes,
        culprits=culprits,
        aa=aa,
        budget_board=BudgetBoard(store, source.get),
        supersession=supersession,
        _closers=closers,
    )


DISPATCH_PARALLEL = 8
"""Queued dispatches sent at once after a GitHub outage."""

IN_REQUEST_RETRIES = 2
"""Retries of a dispatch while GitHub's webhook request waits; the queue does the rest."""


def _listed(source: AllowlistSource) -> Callable[[str], Awaitable[bool]]:
    async def still_listed(repo: str) -> bool:
        return (await source.get()).entry(repo) is not None

    return still_listed


def _sender(github: GitHubClient, max_retries: int | None) -> SendDispatch:
    async def send(repo: str, body: bytes) -> None:
        await github.dispatch_encoded(repo, body, max_retries=max_retries)

    return send
