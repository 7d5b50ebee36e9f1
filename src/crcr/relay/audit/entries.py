"""Audit entries: one JSON object per callback decision, dispatch outcome or check run.

Every entry has a `bucket` (the lower-cased downstream repository it is kept under), an
`at` (epoch seconds) and a `kind`. A callback refused before its token was verified
(401, or 503 while the issuer's keys are unreachable) has no verified repository: it
is kept in the `UNAUTHENTICATED` bucket, never under the repository its unverified token
names — anyone can forge that, and would otherwise push a real backend's entries out of
its bounded trail. The claimed repository and issuer are kept as fields (`claimed_repo`,
`issuer`, `verified: false`) for `crcr doctor`. Tokens are never kept, nor the body.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from crcr.oidc.claims import TokenRejected, VerifiedIdentity, bearer_token, parse_token

UNAUTHENTICATED = "(unauthenticated)"
"""The bucket of callbacks whose token could not be verified."""
NOT_ALLOWLISTED = "(not allowlisted)"
"""The bucket of verified callbacks from repositories not on the allowlist: anyone can
mint a token for a repository of their own, so a bucket each would let the number of
buckets — and the trail — grow without bound. With it, the buckets are the allowlist's
repositories plus these two."""

CALLBACK, DISPATCH, CHECK_RUN, LEVEL = "callback", "dispatch", "check_run", "level"
ACCEPTED, DUPLICATE, REFUSED = "accepted", "duplicate", "refused"

_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
IGNORED_REASON = "not on the allowlist at L2 or above (SPEC §5 step 2)"


@dataclass
class CallbackFacts:
    """What is known about one callback when it is decided; filled in as checks pass."""

    repo: str | None = None
    subject: str | None = None
    issuer: str | None = None
    delivery_id: str | None = None
    job_key: str | None = None
    reported: str | None = None
    listed: bool = False
    """Whether step 2 found the verified repository on the allowlist: until then (the
    allowlist unavailable) it is a stranger's, kept in the shared bucket."""

    def identified(self, identity: VerifiedIdentity) -> None:
        """The token is verified: who sent the callback."""
        self.repo = identity.repo
        self.subject = _text(identity.claims.get("sub"))
        self.issuer = _text(identity.claims.get("iss"))

    def described(
        self, delivery_id: str, job_key: str | None, status: str, conclusion: str | None
    ) -> None:
        """The body parsed: which dispatch and job it speaks of, and what it reports."""
        self.delivery_id, self.job_key = delivery_id, job_key
        self.reported = f"{status} ({conclusion})" if conclusion else status


def decision_of(status_code: int, body: dict[str, Any]) -> tuple[str, str | None]:
    """`accepted`, `duplicate` or `refused`, and the reason of a refusal."""
    if status_code == 200 and body.get("status") == "duplicate":
        return DUPLICATE, None
    if status_code == 200 and body.get("status") == "ignored":
        return REFUSED, IGNORED_REASON
    if 200 <= status_code < 300:
        return ACCEPTED, None
    reason = body.get("detail", body.get("error"))
    text = str(reason) if reason is not None else f"HTTP {status_code}"
    if body.get("request_id"):
        text += f" (request id {body['request_id']})"
    return REFUSED, text


def callback_entry(
    facts: CallbackFacts,
    status_code: int,
    body: dict[str, Any],
    authorization: str | None,
    *,
    at: float | None = None,
) -> dict[str, Any]:
    """The audit entry of one answered callback."""
    decision, reason = decision_of(status_code, body)
    entry: dict[str, Any] = {
        "kind": CALLBACK,
        "at": time.time() if at is None else at,
        "decision": decision,
        "status": status_code,
        "reason": reason,
        "delivery_id": facts.delivery_id,
        "job_key": facts.job_key,
        "reported": facts.reported,
        "subject": facts.subject,
        "issuer": facts.issuer,
    }
    if facts.repo is not None:
        bucket = facts.repo.lower() if facts.listed else NOT_ALLOWLISTED
        return {"bucket": bucket, "repo": facts.repo, "verified": True, **entry}
    claimed = _unverified_claims(authorization)
    return {
        "bucket": UNAUTHENTICATED,
        "repo": None,
        "verified": False,
        "claimed_repo": _claimed_repo(claimed),
        **entry,
        "issuer": _text(claimed.get("iss")),
    }


def dispatch_entry(repo: str, delivery_id: str, outcome: str, error: str | None) -> dict[str, Any]:
    """The audit entry of one dispatch: `sent`, `queued` (retrying), `failed` or `dropped`."""
    return {
        "bucket": repo.lower(),
        "repo": repo,
        "kind": DISPATCH,
        "at": time.time(),
        "decision": outcome,
        "delivery_id": delivery_id,
        "reason": error,
    }


def check_run_entry(repo: str, job_key: str, check_name: str, check_run_id: Any) -> dict[str, Any]:
    """The audit entry of one upstream check run created for a job of `repo` (L3/L4)."""
    return {
        "bucket": repo.lower(),
        "repo": repo,
        "kind": CHECK_RUN,
        "at": time.time(),
        "decision": "created",
        "job_key": job_key,
        "check_name": check_name,
        "check_run_id": check_run_id,
    }


def level_entry(repo: str, decision: str, reason: str, by: str | None) -> dict[str, Any]:
    """The audit entry of a level decision (SPEC §10.2): `declined`, `override set`, …

    `reason` says what it means (until when, to which level, why); `by` is who did it
    (the GitHub login that closed the pull request, the operator that set an override).
    """
    return {
        "bucket": repo.lower(),
        "repo": repo,
        "kind": LEVEL,
        "at": time.time(),
        "decision": decision,
        "reason": reason,
        "subject": by,
    }


def _unverified_claims(authorization: str | None) -> dict[str, Any]:
    """The claims of a token that failed verification: to read, never to trust."""
    try:
        return dict(parse_token(bearer_token(authorization)).claims)
    except TokenRejected:
        return {}


def _claimed_repo(claims: dict[str, Any]) -> str | None:
    repo = claims.get("repository")
    return repo if isinstance(repo, str) and _REPO.match(repo) else None


def _text(value: Any, limit: int = 300) -> str | None:
    return value[:limit] if isinstance(value, str) else None
