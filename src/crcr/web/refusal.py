"""One exception for every request the relay or the HUD refuses: status, detail and outcome.

gidgethub's shape: one family, and callers catch by type. A module that finds the
problem raises a `Refused` naming the answer (`status_code`, with `detail` for the body's
`{"detail"}`, and any `headers`) and the outcome it counts as in the metrics, so no edge
works a metric label back out of a status code. The HTTP edges turn it into
`error_body(detail)`; the relay's in-process HUD transport passes the HUD's refusal on
as the HTTP route would. A success is never a `Refused`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.web.error_bodies import error_body


class Refused(Exception):
    """The request is refused: answer `status_code` with `detail`, count it as `outcome`."""

    def __init__(
        self,
        status_code: int,
        detail: str,
        outcome: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail
        self.outcome = outcome
        self.headers: dict[str, str] = dict(headers or {})

    @property
    def body(self) -> dict[str, Any]:
        """The JSON error body to answer with (SPEC §5)."""
        return error_body(self.detail)


class Invalid(Refused):
    """400: the body is unacceptable; `detail` names the field first."""

    def __init__(self, detail: str) -> None:
        super().__init__(400, detail, "invalid")


class TooLarge(Refused):
    """413: the body is larger than the endpoint reads."""

    def __init__(self, detail: str) -> None:
        super().__init__(413, detail, "too_large")


class RateLimited(Refused):
    """429: a budget is spent; `Retry-After` says how many seconds until it refills."""

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(429, detail, "rate_limited", {"Retry-After": str(retry_after)})
        self.retry_after = retry_after
