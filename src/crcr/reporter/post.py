"""Deliver the callback to the relay, retrying what a retry can fix (SPEC §8)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Literal
from urllib.parse import urlsplit

from crcr.reporter.retry import RetryPolicy, Sleep, real_sleep, retry_after_seconds
from crcr.reporter.token import MintToken
from crcr.reporter.transport import Answer, NetworkError, Send

Verdict = Literal["accepted", "queued", "duplicate", "ignored"]
REQUEST_TIMEOUT = 10.0
"""Seconds `crcr report` gives each phase of a request by default (the relay answers
well inside it: `crcr.relay.callback.deps`)."""

_MESSAGE_LIMIT = 300
# The relay sends `Retry-After` with 429 (rate limit) and 503 (state store down, §5.3).
_RETRY_AFTER_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class PostOutcome:
    """What the relay made of a callback it accepted."""

    status_code: int
    verdict: Verdict
    attempts: int

    def describe(self) -> str:
        """One line for the CI log."""
        what = {
            "accepted": "relay accepted the report",
            "queued": "relay accepted the report; the HUD is catching up (it will retry)",
            "duplicate": "relay already had this report (a retried delivery); nothing changed",
            "ignored": "relay ignored the report (this repository is not at level L2 or above)",
        }[self.verdict]
        return f"crcr report: HTTP {self.status_code}: {what}"


class CallbackRefused(Exception):
    """The relay answered 4xx: the report is wrong and sending it again will not help."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"relay refused the report with HTTP {status_code}: {message}")
        self.status_code = status_code


class CallbackUndelivered(Exception):
    """Every attempt failed on the network or with a relay error (5xx, 429).

    `status_code` is the last attempt's HTTP status, None when it got no answer at all.
    """

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def relay_message(response: Answer, *, secret: str) -> str:
    """The relay's own explanation of a refusal, short, with `secret` blanked out.

    The relay says it under `detail` (SPEC §5, with the offending `field` beside it);
    older relays said `error`, and other servers in front of it `message` or `reason`.
    """
    text = response.text.strip()
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        for key in ("detail", "error", "message", "reason"):
            if isinstance(parsed.get(key), str):
                text = parsed[key]
                break
        else:
            text = json.dumps(parsed, separators=(",", ":"))
        field = parsed.get("field")
        if isinstance(field, str) and field and field not in text:
            text = f"{text} (field {field})"
        if isinstance(parsed.get("request_id"), str):
            text = f"{text} (request id {parsed['request_id']})"
    return _for_the_log(text, secret=secret) or "(empty body)"


def network_problem(exc: NetworkError, host: str, *, secret: str) -> str:
    """What went wrong on the wire, for the CI log (`ConnectError talking to …: why`)."""
    what = f"{exc.kind} talking to {host}"
    detail = exc.detail
    return f"{what}: {_for_the_log(detail, secret=secret)}" if detail else what


def _for_the_log(text: str, *, secret: str) -> str:
    text = " ".join(text.split())
    if secret:
        text = text.replace(secret, "[token]")
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 1] + "…"
    return text


def _verdict(response: Answer) -> Verdict:
    if response.status_code == 202:
        return "queued"
    try:
        parsed: Any = response.json()
    except ValueError:
        return "accepted"
    if isinstance(parsed, dict):
        if parsed.get("status") == "duplicate":
            return "duplicate"
        if parsed.get("status") == "ignored" or parsed.get("ignored") is True:
            return "ignored"
    return "accepted"


async def post_callback(
    send: Send,
    url: str,
    body: dict[str, Any],
    token: MintToken,
    *,
    policy: RetryPolicy | None = None,
    sleep: Sleep = real_sleep,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> PostOutcome:
    """POST the callback, retrying network errors, timeouts, 5xx and 429.

    Retrying is safe even when a lost response hid a success: the relay answers an
    exact repeat of an accepted callback with 200 "duplicate" (SPEC §5.7). `token` is
    asked before every attempt, because the retries can outlast one token (see
    `FreshTokens`).
    """
    policy = policy or RetryPolicy()
    payload = json.dumps(body, separators=(",", ":")).encode()
    host = urlsplit(url).netloc or url
    problem = "no attempt made"
    last_status: int | None = None
    for attempt in range(1, policy.attempts + 1):
        wait: float | None = None
        last_status = None
        secret = await token()
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        try:
            response = await send("POST", url, headers, payload)
        except NetworkError as exc:
            problem = network_problem(exc, host, secret=secret)
        else:
            status = last_status = response.status_code
            if 200 <= status < 300:
                return PostOutcome(status_code=status, verdict=_verdict(response), attempts=attempt)
            if 300 <= status < 400:
                where = response.headers.get("location", "elsewhere")
                raise CallbackRefused(status, f"redirected to {where}; use that callback URL")
            if status < 500 and status != 429:
                raise CallbackRefused(status, relay_message(response, secret=secret))
            if status in _RETRY_AFTER_STATUSES:
                header = response.headers.get("retry-after")
                wait = retry_after_seconds(header, policy, now=clock())
            what = "rate limited (HTTP 429)" if status == 429 else f"HTTP {status}"
            problem = f"{what}: {relay_message(response, secret=secret)}"
        if attempt < policy.attempts:
            await sleep(wait if wait is not None else policy.delay(attempt))
    raise CallbackUndelivered(f"gave up after {policy.attempts} attempts: {problem}", last_status)
