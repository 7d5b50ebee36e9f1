"""The cache, flag and job-summary roles: short-lived values kept by key (SPEC §7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Caches(Protocol):
    """TTL caches by namespace: allowlist, JWKS, installation tokens, SHA checks."""

    async def cache_get(self, namespace: str, key: str) -> str | None:
        """Return a cached value, or None when absent or expired."""

    async def cache_set(self, namespace: str, key: str, value: str, ttl: float) -> None:
        """Cache `value` for `ttl` seconds."""

    async def cache_delete(self, namespace: str, key: str) -> None:
        """Forget a cached value."""


class Flags(Protocol):
    """Per-(head_sha, repo) flags, such as "check runs wanted"."""

    async def set_flag(self, name: str, head_sha: str, repo: str, ttl: int) -> None:
        """Raise a flag such as "check runs wanted" for (head_sha, repo)."""

    async def has_flag(self, name: str, head_sha: str, repo: str) -> bool:
        """Whether the flag is raised."""


class JobSummaries(Protocol):
    """What each job of a (head_sha, repo) last reported, for backfilling check runs."""

    async def put_job_summary(
        self, head_sha: str, repo: str, job_key: str, summary: Mapping[str, Any], ttl: int
    ) -> None:
        """Record (replace) what a job last reported, for backfilling check runs."""

    async def job_summaries(self, head_sha: str, repo: str) -> dict[str, dict[str, Any]]:
        """Every job summary for (head_sha, repo), by job key."""
