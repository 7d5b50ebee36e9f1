"""`POST /github/webhook`: verify, route and fan out upstream events (SPEC §4)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from crcr.relay.allowlist.source import AllowlistUnavailable
from crcr.relay.checks.check_runs import CHECKS_WANTED_FLAG
from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook import metrics
from crcr.relay.webhook.client_payload import PayloadTooLarge, build_client_payload
from crcr.relay.webhook.events import Dispatch, Ignore, LabelDevice, Rerequest, route_event
from crcr.relay.webhook.fanout import FanOut, Result, dispatch_to_downstreams
from crcr.relay.webhook.rationing import FanOutBudget
from crcr.relay.webhook.signature import SignatureCheck, SignatureMismatch, SignatureMissing
from crcr.stores.roles import Flags
from crcr.stores.state import StateStoreUnavailable
from crcr.web.error_bodies import error_response, new_request_id
from crcr.web.http_body import BodyCut, BodyTooLarge, read_capped_stream
from crcr.web.json_body import InvalidJson, load_json

log = logging.getLogger(__name__)

GITHUB_WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024
"""GitHub caps webhook payloads at 25 MB; anything larger did not come from it."""


class DownstreamTargets(Protocol):
    """The slice of the allowlist the webhook needs."""

    def dispatch_targets(self) -> Sequence[str]:
        """Every allowlisted repo, at every level."""
        ...

    def repos_for_device(self, device: str) -> Sequence[str]:
        """The L3 repos that a `ciflow/crcr/<device>` label opts in."""
        ...

    def events_of(self, repo: str) -> AbstractSet[str]:
        """The event kinds a repo takes part in (an entry may opt out of PRs)."""
        ...


@dataclass(frozen=True)
class WebhookDeps:
    """What the webhook endpoint needs; built once at start-up."""

    secret: bytes
    upstream_repo: str
    push_branches: Sequence[str]
    record_ttl: int
    allowlist: Callable[[], Awaitable[DownstreamTargets]]
    fanout: FanOut
    flags: Flags
    """Where a label raises "check runs wanted" for the devices' repos (SPEC §7)."""
    # SPEC §7 (crcr.relay.checks.publisher / reruns): check runs for jobs that reported
    # before the label; re-runs answered with (status, body).
    backfill_checks: Callable[[str, Sequence[str]], Awaitable[int]] | None = None
    rerequest: Callable[[str, dict[str, Any]], Awaitable[tuple[int, dict[str, Any]]]] | None = None
    # SPEC §12 (crcr.relay.allowlist.revocation): a push changing the allowlist moves its
    # stamp, before this push's own fan-out, which then already uses the new allowlist.
    allowlist_pushed: Callable[[Mapping[str, Any]], Awaitable[bool]] | None = None
    # SPEC §10.2 (crcr.relay.levels.governance): a demotion pull request closed unmerged
    # declines the demotion, whatever the event routes to afterwards.
    pull_request_seen: Callable[[Mapping[str, Any]], Awaitable[None]] | None = None
    # SPEC §15 (crcr.relay.budgets.gate): capped backends wait for a slot, path-filtered
    # ones a PR does not touch are skipped.
    budget: FanOutBudget | None = None
    # SPEC §15 (crcr.relay.budgets.merge_queue): a destroyed merge group closes its records.
    merge_group_seen: Callable[[Mapping[str, Any]], Awaitable[None]] | None = None
    # SPEC §15 (crcr.relay.budgets.supersession): a PR head sent (or waiting for a slot)
    # becomes its backends' live head; a synchronize supersedes the older of the two
    # (the payload orders them).
    head_dispatched: (
        Callable[[str, UpstreamContext, Sequence[str], Mapping[str, Any]], Awaitable[int]] | None
    ) = None


def webhook_router(deps: Callable[[], WebhookDeps]) -> APIRouter:
    """The webhook route; `deps` returns its dependencies once the app has opened them."""
    router = APIRouter(tags=["relay"])

    @router.post("/github/webhook")
    async def github_webhook(request: Request) -> JSONResponse:
        """Receive one GitHub webhook delivery."""
        event = request.headers.get("x-github-event", "")
        delivery_id = request.headers.get("x-github-delivery", "")
        try:
            response = await _handle(deps(), request, event, delivery_id)
        except BodyCut:
            # GitHub (or a proxy) gave up mid-body; it redelivers, and nothing was written.
            log.info(
                "webhook client went away before its body was read (delivery %s); nothing written",
                delivery_id,
                extra={"delivery_id": delivery_id},
            )
            response = _refuse(400, event, "disconnected", "client disconnected")
        except StateStoreUnavailable as exc:
            log.error("state store unavailable: %s", exc, extra={"delivery_id": delivery_id})
            error = "state store unavailable, retry later"
            response = _refuse(503, event, "store_unavailable", error)
        except AllowlistUnavailable as exc:
            # SPEC §3: the operator's to fix, and said in the answer GitHub shows in the
            # delivery log. GitHub does not redeliver by itself: the line names the delivery.
            log.warning(
                "webhook delivery %s answered 503: no allowlist in force",
                delivery_id,
                extra={"delivery_id": delivery_id},
            )
            response = _refuse(
                503, event, "allowlist_unavailable", str(exc), headers={"Retry-After": "60"}
            )
        except Exception:
            request_id = new_request_id()
            log.exception(
                "webhook failed (request id %s)",
                request_id,
                extra={"delivery_id": delivery_id, "request_id": request_id},
            )
            response = _refuse(500, event, "error", "internal error", request_id=request_id)
        return response

    return router


async def _handle(
    deps: WebhookDeps, request: Request, event: str, delivery_id: str
) -> JSONResponse:
    try:
        signature = SignatureCheck(deps.secret, request.headers.get("x-hub-signature-256"))
        body = await read_capped_stream(request, GITHUB_WEBHOOK_BODY_LIMIT, signature.update)
        signature.verify()
    except BodyTooLarge as exc:
        return _refuse(413, event, "too_large", str(exc))
    except SignatureMissing as exc:
        return _refuse(400, event, "unsigned", str(exc))
    except SignatureMismatch as exc:
        return _refuse(401, event, "bad_signature", str(exc))
    if not event:
        return _refuse(400, event, "bad_request", "missing X-GitHub-Event header")
    if not delivery_id:
        return _refuse(400, event, "bad_request", "missing X-GitHub-Delivery header")
    try:
        payload = load_json(body)
    except InvalidJson as exc:
        return _refuse(400, event, "bad_request", f"body is {exc}")
    if not isinstance(payload, dict):
        return _refuse(400, event, "bad_request", "body is not a JSON object")

    await _observe(deps, event, payload)
    decision = route_event(
        event, payload, upstream_repo=deps.upstream_repo, push_branches=deps.push_branches
    )
    if isinstance(decision, Ignore):
        return _answer(200, event, "ignored", ignored=True, reason=decision.reason)
    if isinstance(decision, LabelDevice):
        return await _label_device(deps, event, decision)
    if isinstance(decision, Rerequest) and deps.rerequest is not None:
        status, answer = await deps.rerequest(event, payload)
        if status >= 400:
            return _refuse(status, event, "rerequested", **answer)
        return _answer(status, event, "rerequested", **answer)
    if not isinstance(decision, Dispatch):
        return _answer(200, event, "ignored", ignored=True, reason=f"{event} is not handled")
    return await _fan_out(deps, event, delivery_id, decision, payload)


async def _observe(deps: WebhookDeps, event: str, payload: dict[str, Any]) -> None:
    """What some events change whatever they route to: the allowlist's stamp (a push),
    a declined demotion (a closed pull request), a destroyed merge group."""
    if event == "push" and deps.allowlist_pushed is not None:
        await deps.allowlist_pushed(payload)
    if event == "pull_request" and deps.pull_request_seen is not None:
        await deps.pull_request_seen(payload)
    if event == "merge_group" and deps.merge_group_seen is not None:
        await deps.merge_group_seen(payload)


async def _label_device(deps: WebhookDeps, event: str, decision: LabelDevice) -> JSONResponse:
    """A device label on a PR: its backends' checks are wanted on that head (SPEC §7)."""
    allowlist = await deps.allowlist()
    repos = list(allowlist.repos_for_device(decision.device))
    for repo in repos:
        await deps.flags.set_flag(
            CHECKS_WANTED_FLAG, decision.context.head_sha, repo, deps.record_ttl
        )
    backfilled = 0
    if deps.backfill_checks is not None:
        backfilled = await deps.backfill_checks(decision.context.head_sha, repos)
    return _answer(
        200,
        event,
        "labeled",
        ok=True,
        device=decision.device,
        recorded=repos,
        backfilled=backfilled,
    )


async def _fan_out(
    deps: WebhookDeps, event: str, delivery_id: str, decision: Dispatch, payload: dict[str, Any]
) -> JSONResponse:
    try:
        client_payload = build_client_payload(event, delivery_id, payload)
    except PayloadTooLarge as exc:
        return _refuse(422, event, "too_large", str(exc))
    allowlist = await deps.allowlist()
    repos = [
        repo
        for repo in allowlist.dispatch_targets()
        if event != "pull_request" or "pull_request" in allowlist.events_of(repo)
    ]
    budgeted: dict[str, list[str]] = {}
    if deps.budget is not None:
        rationed = await deps.budget.ration(
            delivery_id=delivery_id,
            context=decision.context,
            client_payload=client_payload.value,
            trimmed=client_payload.trimmed,
            repos=repos,
        )
        repos = rationed.send_now
        budgeted = {
            k: v for k, v in (("waiting", rationed.waiting), ("skipped", rationed.skipped)) if v
        }
    outcomes = await dispatch_to_downstreams(
        deps.fanout,
        delivery_id=delivery_id,
        context=decision.context,
        client_payload=client_payload.value,
        trimmed=client_payload.trimmed,
        repos=repos,
    )
    if deps.budget is not None:
        await deps.budget.settle(delivery_id, decision.context, outcomes)
    if deps.head_dispatched is not None:
        # Not duplicates (a redelivery), not refused ones: what this delivery started.
        started = [o.repo for o in outcomes if o.result in (Result.DISPATCHED, Result.QUEUED)]
        await deps.head_dispatched(
            delivery_id, decision.context, started + budgeted.get("waiting", []), payload
        )
    dispatched = [o.repo for o in outcomes if o.result is Result.DISPATCHED]
    duplicates = [o.repo for o in outcomes if o.result is Result.DUPLICATE]
    failed = [o.as_json() for o in outcomes if o.result in (Result.FAILED, Result.QUEUED)]
    nothing_sent = failed and not dispatched and not duplicates
    status = 502 if nothing_sent else 200
    if status == 502:
        detail = f"no dispatch succeeded ({len(failed)} failed)"
        return _refuse(status, event, "dispatch_failed", detail, errors=failed)
    log.info(
        "webhook relayed",
        extra={
            "delivery_id": delivery_id,
            "dispatched": len(dispatched),
            "failed": len(failed),
            "duplicate": len(duplicates),
        },
    )
    return _answer(
        status,
        event,
        "dispatched",
        ok=True,
        dispatched=dispatched,
        failed=failed,
        duplicate=duplicates,
        trimmed=client_payload.trimmed,
        **budgeted,
    )


def _answer(status: int, event: str, outcome: str, **body: Any) -> JSONResponse:
    metrics.WEBHOOKS.labels(event=metrics.event_label(event), outcome=outcome).inc()
    return JSONResponse(body, status_code=status)


def _refuse(status: int, event: str, outcome: str, detail: str, **optional: Any) -> JSONResponse:
    """An error answer, in the shape of every error body (crcr.web.error_bodies)."""
    metrics.WEBHOOKS.labels(event=metrics.event_label(event), outcome=outcome).inc()
    return error_response(status, detail, **optional)
