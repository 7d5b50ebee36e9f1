"""`POST /github/callback`: downstream CI reports, checked in SPEC §5's order (steps 1-9).

This is the security boundary: the repository comes from the verified token, never
from the body, and nothing is written before every check has passed. Only this edge
turns unexpected exceptions into a logged 500 carrying a request id.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import APIRouter
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from crcr.oidc.claims import KeysUnavailable, TokenRejected
from crcr.relay.allowlist.model import Level
from crcr.relay.allowlist.source import AllowlistUnavailable
from crcr.relay.audit.entries import CallbackFacts
from crcr.relay.callback.accept import (
    callback_payload_for,
    forward_answer,
    job_key_for,
    process_job_callback,
)
from crcr.relay.callback.binding import bind_to_dispatch
from crcr.relay.callback.deps import CallbackDeps
from crcr.relay.callback.hud_report import hud_report
from crcr.relay.callback.metrics import CALLBACK_SECONDS, count_callback
from crcr.relay.callback.repository_ids import check_entry_constraints
from crcr.relay.callback.schema import MAX_BODY_BYTES, ParsedCallback, parse_callback
from crcr.relay.callback.self_report import (
    check_self_report,
    commit_verified,
    count_self_report,
)
from crcr.relay.callback.token_binding import (
    NotThisRepository,
    check_run_matches_token,
    with_pinned_run_url,
)
from crcr.relay.jobs.dispatch import DispatchRecord, UpstreamContext
from crcr.relay.results.body import build_hud_body, dispatch_section
from crcr.stores.state import StateStoreUnavailable
from crcr.web.error_bodies import error_body, new_request_id
from crcr.web.http_body import BodyCut, BodyTooLarge, header, read_capped_asgi_body
from crcr.web.refusal import RateLimited, Refused, TooLarge
from crcr.web.web_urls import github_web_url

log = logging.getLogger(__name__)

CALLBACK_PATHS = ("/github/callback", "/github/callback/")
NOT_ALLOWLISTED_RATE_KEY = "callback-ignored:(not allowlisted)"
"""The one rate-limit window every repository not on the allowlist shares."""


def callback_router(
    deps: CallbackDeps | Callable[[], CallbackDeps] | CallbackEndpoint,
) -> APIRouter:
    """The callback routes, with and without the trailing slash (the reference takes both).

    `deps` may be a function returning them, for apps that open their stores in the
    lifespan, after the routes are declared (e.g. `lambda: app.state.callback_deps`).
    """
    router = APIRouter(tags=["relay"])
    if isinstance(deps, CallbackEndpoint):
        endpoint = deps
    else:
        endpoint = CallbackEndpoint(deps if callable(deps) else (lambda: deps))
    for path in CALLBACK_PATHS:
        router.routes.append(Route(path, endpoint, methods=["POST"], include_in_schema=False))
    return router


class CallbackEndpoint:
    """The callback route as a bare ASGI app.

    It is the hot path: building a Starlette `Request`, a `JSONResponse` and FastAPI's
    per-request machinery cost more CPU than several of the checks themselves, and
    this endpoint needs none of it (it reads its own body and answers JSON).
    """

    def __init__(self, deps: Callable[[], CallbackDeps]) -> None:
        self._deps = deps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status_code, body, headers = await handle_callback(self._deps(), scope, receive)
        encoded = orjson.dumps(body)
        raw_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(encoded)).encode()),
            *((name.encode(), value.encode()) for name, value in headers.items()),
        ]
        await send({"type": "http.response.start", "status": status_code, "headers": raw_headers})
        await send({"type": "http.response.body", "body": encoded})


async def handle_callback(
    deps: CallbackDeps, scope: Scope, receive: Receive
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Run the checks in order; the status, JSON body and headers to answer with."""
    started = time.perf_counter()
    outcome = "error"
    headers: dict[str, str] = {}
    facts = CallbackFacts()  # who and what, for the audit trail (SPEC §12)
    try:
        status_code, body, outcome = await _checked_callback(deps, scope, receive, facts)
    except Refused as refused:
        outcome = refused.outcome
        status_code, body, headers = refused.status_code, refused.body, refused.headers
    except StateStoreUnavailable as exc:
        # Fail closed: without the store nothing can be checked or recorded safely.
        log.error("state store unavailable during a callback: %s", exc)
        outcome = "unavailable"
        status_code, body = 503, error_body("state store unavailable, retry later")
        headers = {"Retry-After": "5"}
    except BodyCut as cut:
        # The caller gave up (its own timeout, a busy machine); nothing was written, it
        # will retry, and a repeat is idempotent: not a fault of ours, so not a warning.
        delivery_id = cut.delivery_id() or "unknown"
        log.info(
            "callback client went away before its body was read (delivery %s); nothing written",
            delivery_id,
            extra={"delivery_id": delivery_id},
        )
        outcome = "disconnected"
        status_code, body = 400, error_body("client disconnected")
    except Exception:
        request_id = new_request_id()
        log.exception(
            "callback failed (request id %s)", request_id, extra={"request_id": request_id}
        )
        status_code, body = 500, error_body("internal error", request_id=request_id)
    count_callback(outcome)
    # --- audit trail (SPEC §12): every decision, logged and recorded without waiting.
    if deps.audit is not None and outcome != "disconnected":
        deps.audit.callback_decided(facts, status_code, body, header(scope, b"authorization"))
    CALLBACK_SECONDS.observe(time.perf_counter() - started)
    return status_code, body, headers


@dataclass(frozen=True)
class _Checked:
    """A callback that passed steps 1-6: who sent it, at what level, and its binding.

    `record` is the dispatch record of a job callback, `job_key` its job's store key; a
    self-report has neither and carries its tested commit and whether GitHub confirmed
    it instead.
    """

    verified_repo: str
    level: Level
    callback: ParsedCallback
    record: DispatchRecord | None = None
    job_key: str = ""
    sha: str = ""
    sha_verified: bool = False
    issuer_kind: str = "github"


async def _checked_callback(
    deps: CallbackDeps, scope: Scope, receive: Receive, facts: CallbackFacts
) -> tuple[int, dict[str, Any], str]:
    try:
        async with asyncio.timeout(deps.check_budget):
            checked = await _checks(deps, scope, receive, facts)
    except TimeoutError:
        # Nothing is written before the checks end, so the reporter's retry is safe.
        log.warning("callback checks took longer than %g s", deps.check_budget)
        message = f"the callback could not be checked within {deps.check_budget:g} s"
        raise Refused(503, f"{message}; retry later", "error", {"Retry-After": "5"}) from None
    if checked is None:
        return 200, {"status": "ignored"}, "ignored"
    if checked.record is None:
        return await _self_report(deps, checked)

    # 7-9. atomic transition, metrics, HUD, hooks.
    job = await process_job_callback(
        deps,
        key=checked.job_key,
        verified_repo=checked.verified_repo,
        level=checked.level,
        callback=checked.callback,
        record=checked.record,
        issuer_kind=checked.issuer_kind,
    )
    verdict = job.classification
    if not verdict.accepted:
        if verdict.http_status == 200:
            return 200, {"status": "duplicate"}, "duplicate"
        raise Refused(verdict.http_status, verdict.message, verdict.outcome)
    return forward_answer(job.forward)


async def _checks(
    deps: CallbackDeps, scope: Scope, receive: Receive, facts: CallbackFacts
) -> _Checked | None:
    """Steps 1-6, which write nothing but the rate-limit hit; None for a callback ignored
    (from a repository below L2), which is answered 200 and not refused."""
    # 1. token: the repository is whatever the verified token says.
    try:
        identity = await deps.verifier.verify(header(scope, b"authorization"))
    except KeysUnavailable as exc:
        # Not the caller's fault: answer so that the reporter retries.
        raise Refused(503, exc.reason, "error", {"Retry-After": "30"}) from None
    except TokenRejected as exc:
        raise Refused(401, exc.reason, "unauthorized", {"WWW-Authenticate": "Bearer"}) from None
    verified_repo = identity.repo
    facts.identified(identity)

    # 2. authorisation: results are accepted from L2 and above.
    try:
        allowlist = await deps.allowlist()
    except AllowlistUnavailable as exc:
        # SPEC §3: none in force yet; the reporter retries, and the message says why.
        raise Refused(503, str(exc), "unavailable", {"Retry-After": "60"}) from None
    entry = allowlist.entry(verified_repo)
    facts.listed = entry is not None
    if entry is None or entry.level < Level.L2:
        await _limit_ignored(deps, None if entry is None else entry.repo)
        return None
    try:
        await check_entry_constraints(deps.repository_ids, identity, entry)
    except NotThisRepository as exc:
        raise Refused(403, str(exc), "forbidden") from None
    # From here on the allowlist's spelling: however a token spells the repository
    # (GitHub's names are case-insensitive), it is one backend and one job key.
    verified_repo = entry.repo

    # 3-4. rate limit (per repo, atomic in the store, refused requests not counted) and
    # schema. The body is parsed first so that the hit and the dispatch read (step 6)
    # share one store round trip; the answers keep SPEC §5's order: a caller over the
    # limit gets 429 whatever its body, and nothing is written before every check passed.
    key: str | None = None
    try:
        parsed: ParsedCallback | Refused
        try:
            raw = await read_capped_asgi_body(scope, receive, MAX_BODY_BYTES)
        except BodyTooLarge as exc:
            raise TooLarge(f"body: {exc}") from None
        parsed = parse_callback(raw, allow_http=deps.settings.allows_plain_http)
    except Refused as exc:
        parsed = exc
    else:
        reported = parsed.body
        key = None if reported.is_self_report else job_key_for(reported, verified_repo)
        workflow = reported.workflow
        facts.described(reported.delivery_id, key, str(workflow.status), workflow.conclusion)
    rate = (f"callback:{verified_repo.lower()}", deps.settings.rate_limit_per_min, deps.rate_window)
    raw_record: dict[str, Any] | None = None
    if isinstance(parsed, Refused) or parsed.body.is_self_report:
        decision = await deps.store.hit_rate_limit(*rate)
    else:
        decision, raw_record = await deps.store.hit_rate_limit_and_get_dispatch(
            *rate, parsed.body.delivery_id, entry.repo
        )
    if not decision.allowed:
        raise RateLimited("rate limit exceeded", max(1, decision.retry_after))
    if isinstance(parsed, Refused):
        raise parsed  # refused, but counted against the rate limit first
    for problem in parsed.body.workflow.failure_detail_problems:
        # The downstream's fault, and advisory: said in the log, the callback goes on.
        log.warning(
            "callback from %s (delivery %s): %s", verified_repo, parsed.body.delivery_id, problem
        )

    check_run_matches_token(identity, parsed)
    parsed = with_pinned_run_url(identity, parsed, github_web_url(deps.settings.github_api_url))
    # 5. nightly / periodic self-reports: the tested commit must exist upstream.
    if parsed.body.is_self_report:
        sha = check_self_report(parsed.body)
        verified = await commit_verified(
            deps.store,
            deps.commit_exists,
            deps.settings.upstream_repo,
            sha,
            within=deps.lookup_budget,
            reporter=entry.repo,
            lookups_per_hour=deps.settings.self_report_lookups_per_hour,
        )
        await count_self_report(deps.store, entry.repo, sha, deps.clock())
        return _Checked(verified_repo, entry.level, parsed, sha=sha, sha_verified=verified)
    # 6. binding to the dispatch record (keyed by the allowlist's spelling).
    record = bind_to_dispatch(raw_record, parsed.body)
    # The per-dispatch job count of an `in_progress` rides the transition (step 7).
    assert key is not None  # a job callback that parsed has its key
    return _Checked(
        verified_repo,
        entry.level,
        parsed,
        record=record,
        job_key=key,
        issuer_kind=identity.issuer_kind,
    )


async def _limit_ignored(deps: CallbackDeps, listed_repo: str | None) -> None:
    """Rate-limit a callback that will be answered "ignored" (SPEC §5 step 3).

    Anyone can mint an Actions token for a repository of their own, so repositories
    not on the allowlist share one budget (`NOT_ALLOWLISTED_RATE_KEY`, a repo's own
    rate): their number is not the operator's to bound. An L1 repo has its own, as an
    L2 repo does.
    """
    name = f"callback:{listed_repo.lower()}" if listed_repo else NOT_ALLOWLISTED_RATE_KEY
    decision = await deps.store.hit_rate_limit(
        name, deps.settings.rate_limit_per_min, deps.rate_window
    )
    if not decision.allowed:
        raise RateLimited("rate limit exceeded", max(1, decision.retry_after))


async def _self_report(deps: CallbackDeps, checked: _Checked) -> tuple[int, dict[str, Any], str]:
    """Forward a nightly/periodic result as informational: no dispatch, no state machine."""
    tested = UpstreamContext(
        upstream_repo=deps.settings.upstream_repo,
        event_type=checked.callback.body.event_type or "",
        head_sha=checked.sha,
        pr_number=None,
    )
    hud_body = build_hud_body(
        verified_repo=checked.verified_repo,
        level=str(checked.level),
        queue_time=None,
        execution_time=None,
        dispatch=dispatch_section(tested),
        callback_payload=callback_payload_for(deps, checked.callback),
        extra_trusted={"informational": True, "sha_verified": checked.sha_verified},
    )
    report = None
    if deps.forwarder.takes_reports:
        report = hud_report(
            checked.callback,
            verified_repo=checked.verified_repo,
            level=str(checked.level),
            context=tested,
            queue_time=None,
            execution_time=None,
        )
    # No job moved, so no hooks: a self-report gets no check run and no confirmation.
    forwarded = await deps.forwarder.forward(hud_body, report=report, budget=deps.forward_budget)
    return forward_answer(forwarded)
