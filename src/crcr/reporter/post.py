"""Deliver the callback to the relay, retrying what a retry can fix (SPEC §8)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from crcr.reporter.retry import RetryPolicy, Sleep, real_sleep, retry_after_seconds

Verdict = Literal["accepted", "queued", "duplicate", "ignored"]
_MESSAGE_LIMIT = 300


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
    """Every attempt failed on the network or with a relay error (5xx, 429)."""


def relay_message(response: httpx.Response, *, secret: str) -> str:
    """The relay's own explanation of a refusal, short, with `secret` blanked out."""
    text = response.text.strip()
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        for key in ("error", "detail", "message", "reason"):
            if isinstance(parsed.get(key), str):
                text = parsed[key]
                break
        else:
            text = json.dumps(parsed, separators=(",", ":"))
    text = " ".join(text.split()) or "(empty body)"
    if secret:
        text = text.replace(secret, "[token]")
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 1] + "…"
    return text


def _verdict(response: httpx.Response) -> Verdict:
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
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    token: str,
    *,
    policy: RetryPolicy | None = None,
    sleep: Sleep = real_sleep,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> PostOutcome:
    """POST the callback, retrying network errors, timeouts, 5xx and 429.

    Retrying is safe even when a lost response hid a success: the relay answers an
    exact repeat of an accepted callback with 200 "duplicate" (SPEC §5.7).
    """
    policy = policy or RetryPolicy()
    payload = json.dumps(body, separators=(",", ":")).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    host = urlsplit(url).netloc or url
    problem = "no attempt made"
    for attempt in range(1, policy.attempts + 1):
        wait: float | None = None
        try:
            response = await client.post(url, content=payload, headers=headers)
        except httpx.TransportError as exc:
            problem = f"{type(exc).__name__} talking to {host}"
        else:
            status = response.status_code
            if 200 <= status < 300:
                return PostOutcome(status_code=status, verdict=_verdict(response), attempts=attempt)
            if 300 <= status < 400:
                where = response.headers.get("location", "elsewhere")
                raise CallbackRefused(status, f"redirected to {where}; use that callback URL")
            if status == 429:
                wait = retry_after_seconds(response.headers.get("retry-after"), policy, now=clock())
                problem = f"rate limited (HTTP 429): {relay_message(response, secret=token)}"
            elif status >= 500:
                problem = f"HTTP {status}: {relay_message(response, secret=token)}"
            else:
                raise CallbackRefused(status, relay_message(response, secret=token))
        if attempt < policy.attempts:
            await sleep(wait if wait is not None else policy.delay(attempt))
    raise CallbackUndelivered(f"gave up after {policy.attempts} attempts: {problem}")
