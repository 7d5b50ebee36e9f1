"""An alert as a value (SPEC §13): which transitions raise one, its body, its signature.

Pure. An alert follows a change of state, never a failure: luci-notify's
`on_status_change` and TestGrid's "alert after N failures" both found that an alert per
failure is muted within a week. A first state (`no_data` → anything, or a backend never
judged before) raises none: there was no earlier state to leave.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

BACKEND_STATE, CANARY = "backend_state", "canary"
BACKEND_ALERTING = frozenset({"passing", "failing", "flaky", "stale"})
"""The backend states an alert may leave or enter; `no_data` is neither."""
CANARY_ALERTING = frozenset({"healthy", "degraded"})
SIGNATURE_HEADER = "X-CRCR-Signature-256"


@dataclass(frozen=True)
class Alert:
    """One change of state: of a backend (`backend_state`) or of the canary (`canary`)."""

    kind: str
    repo: str
    before: str
    after: str
    at: datetime
    url: str | None

    @property
    def alert_id(self) -> str:
        """Names this change once: the queue keeps one item per (alert, sink)."""
        text = "\x1f".join((self.kind, self.repo, self.before, self.after, self.at.isoformat()))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def as_json(self) -> dict[str, Any]:
        """The SPEC §13 body: kind, repo, from, to, at, url."""
        return {
            "kind": self.kind,
            "repo": self.repo,
            "from": self.before,
            "to": self.after,
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "url": self.url,
        }


def transition(
    kind: str, repo: str, before: str | None, after: str, at: datetime, url: str | None
) -> Alert | None:
    """The alert for `before` → `after`, or None: no change, or a first state."""
    alerting = CANARY_ALERTING if kind == CANARY else BACKEND_ALERTING
    if before is None or before == after or before not in alerting or after not in alerting:
        return None
    return Alert(kind, repo, before, after, at, url)


def encode(body: dict[str, Any]) -> bytes:
    """The exact bytes posted and signed."""
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def signature(secret: bytes, body: bytes) -> str:
    """`sha256=<hex>` of the body, as GitHub signs its webhooks (X-Hub-Signature-256)."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def alert_text(body: dict[str, Any]) -> str:
    """An alert in one line of words: a state's change, or a culprit search's verdict."""
    if body["kind"] == "culprit":
        found = body.get("culprit")
        if found:
            return f"backend {body['repo']} broke at {str(found)[:12]} ({body['to']})"
        return f"backend {body['repo']}: the culprit search is {body['to']}"
    what = "canary" if body["kind"] == CANARY else "backend"
    return f"{what} {body['repo']} is {body['to']} (was {body['from']})"


def slack_message(body: dict[str, Any]) -> dict[str, str]:
    """One line for a Slack-compatible incoming webhook."""
    link = f" <{body['url']}|details>" if body.get("url") else ""
    return {"text": f"crcr: {alert_text(body)}{link}"}
