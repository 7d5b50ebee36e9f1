"""How much of GitHub's API rate limit is left, per installation, from response headers.

Every REST answer carries `x-ratelimit-remaining`, `x-ratelimit-limit`,
`x-ratelimit-reset` and `x-ratelimit-resource` (GitHub's "Rate limits for the REST
API"). Each App installation has its own budget, and the App itself (its JWT calls)
another: an operator alerting on a low gauge sees which one a fan-out is draining
before GitHub starts answering 403s. The `installation` label is the installation's
account login (one per installation) or `app`; `resource` is GitHub's bucket name,
outside the known set counted as `other`, so the label sets stay closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from prometheus_client import Gauge

APP = "app"
"""The `installation` label of calls made as the App (its JWT), not as an installation."""

RESOURCES = frozenset(
    {
        "core",
        "search",
        "code_search",
        "graphql",
        "integration_manifest",
        "dependency_snapshots",
        "code_scanning_upload",
        "actions_runner_registration",
        "source_import",
        "scim",
        "audit_log",
    }
)

REMAINING = Gauge(
    "crcr_github_rate_limit_remaining",
    "GitHub API requests left in the current window, per installation and resource.",
    ["installation", "resource"],
    multiprocess_mode="mostrecent",
)
LIMIT = Gauge(
    "crcr_github_rate_limit_limit",
    "GitHub API requests allowed per window, per installation and resource.",
    ["installation", "resource"],
    multiprocess_mode="mostrecent",
)
RESET = Gauge(
    "crcr_github_rate_limit_reset_timestamp_seconds",
    "When GitHub's current rate-limit window ends (Unix time), per installation and resource.",
    ["installation", "resource"],
    multiprocess_mode="mostrecent",
)


def installation_of(repo: str | None) -> str:
    """The `installation` label of a call made for `repo` (None: as the App)."""
    return repo.partition("/")[0].lower() if repo else APP


def observe(installation: str, headers: Mapping[str, str]) -> None:
    """Update the gauges from one response's headers (absent or malformed ones are skipped)."""
    remaining = _number(headers.get("x-ratelimit-remaining"))
    if remaining is None:
        return
    resource = headers.get("x-ratelimit-resource", "core")
    gauges = _gauges(installation, resource if resource in RESOURCES else "other")
    gauges.remaining.set(remaining)
    limit = _number(headers.get("x-ratelimit-limit"))
    if limit is not None:
        gauges.limit.set(limit)
    reset = _number(headers.get("x-ratelimit-reset"))
    if reset is not None:
        gauges.reset.set(reset)


class _Labelled(NamedTuple):
    remaining: Gauge
    limit: Gauge
    reset: Gauge


_LABELLED: dict[tuple[str, str], _Labelled] = {}
"""The gauges' children per (installation, resource): `labels()` checks and joins its
arguments on every call, and every dispatch's answer is observed."""


def _gauges(installation: str, resource: str) -> _Labelled:
    found = _LABELLED.get((installation, resource))
    if found is None:
        found = _LABELLED[installation, resource] = _Labelled(
            *(gauge.labels(installation, resource) for gauge in (REMAINING, LIMIT, RESET))
        )
    return found


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
