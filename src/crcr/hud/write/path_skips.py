"""Backends a PR head was not dispatched to because it touches none of their paths
(SPEC §15 "Paths"): the relay tells the HUD, whose PR view says "skipped: no matching
paths" for that head until the backend has jobs on it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from anyio import to_thread
from sqlalchemy import Engine, select

from crcr.hud.db import sqlite_writer_lock
from crcr.hud.models import PATH_SKIPS
from crcr.web.refusal import Invalid

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")
MAX_SKIPPED = 1000
"""Backends one notice may name: more than any allowlist holds."""


@dataclass(frozen=True)
class PathSkips:
    """One PR head's skipped backends, as the relay reports them."""

    upstream_repo: str
    pr_number: int
    head_sha: str
    delivery_id: str
    skipped: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """The body of `POST /api/crcr/path-skips`."""
        return {
            "upstream_repo": self.upstream_repo,
            "pr_number": self.pr_number,
            "head_sha": self.head_sha,
            "delivery_id": self.delivery_id,
            "skipped": list(self.skipped),
        }


def _text(body: Mapping[str, Any], key: str, pattern: re.Pattern[str] | None = None) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value or len(value) > 200:
        raise Invalid(f"{key} must be a string of 1 to 200 characters")
    if pattern is not None and not pattern.match(value):
        raise Invalid(f"{key} is malformed")
    return value


def parse_path_skips(body: Any) -> PathSkips:
    """Validate a notice; raises `Invalid` (400) naming the field."""
    if not isinstance(body, Mapping):
        raise Invalid("body must be an object")
    number = body.get("pr_number")
    if isinstance(number, float) and number.is_integer() and abs(number) < 2**53:
        number = int(number)  # JSON (and JSON Schema) read `5.0` as `5`
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 2**31:
        raise Invalid("pr_number must be a positive integer")
    skipped = body.get("skipped")
    if not isinstance(skipped, list) or len(skipped) > MAX_SKIPPED:
        raise Invalid(f"skipped must be a list of at most {MAX_SKIPPED} repositories")
    if not all(isinstance(repo, str) and _REPO.match(repo) for repo in skipped):
        raise Invalid("skipped must hold repositories of the form owner/repo")
    return PathSkips(
        upstream_repo=_text(body, "upstream_repo", _REPO),
        pr_number=number,
        head_sha=_text(body, "head_sha", _SHA),
        delivery_id=_text(body, "delivery_id"),
        skipped=tuple(skipped),
    )


def record_path_skips(engine: Engine, skips: PathSkips, now: datetime) -> int:
    """Keep each (head, backend) once; returns how many were new."""
    key = (skips.upstream_repo, skips.pr_number, skips.head_sha)
    added = 0
    with engine.begin() as connection:
        known = set(
            connection.execute(
                select(PATH_SKIPS.c.downstream_repo).where(
                    PATH_SKIPS.c.upstream_repo == key[0],
                    PATH_SKIPS.c.pr_number == key[1],
                    PATH_SKIPS.c.head_sha == key[2],
                )
            ).scalars()
        )
        for repo in dict.fromkeys(skips.skipped):
            if repo in known:
                continue
            connection.execute(
                PATH_SKIPS.insert().values(
                    upstream_repo=key[0],
                    pr_number=key[1],
                    head_sha=key[2],
                    downstream_repo=repo,
                    delivery_id=skips.delivery_id,
                    skipped_at=now,
                )
            )
            added += 1
    return added


async def store_path_skips(engine: Engine, skips: PathSkips, now: datetime) -> int:
    """`record_path_skips` off the event loop; on SQLite under the writers' lock."""
    if engine.dialect.name != "sqlite":
        return await to_thread.run_sync(record_path_skips, engine, skips, now)
    async with sqlite_writer_lock(engine).held_async():
        return record_path_skips(engine, skips, now)


def skipped_heads(engine: Engine, number: int) -> Sequence[tuple[str, str]]:
    """(backend, head SHA) of every path skip on PR `number`, oldest first."""
    with engine.connect() as connection:
        rows = connection.execute(
            select(PATH_SKIPS.c.downstream_repo, PATH_SKIPS.c.head_sha)
            .where(PATH_SKIPS.c.pr_number == number)
            .order_by(PATH_SKIPS.c.skipped_at, PATH_SKIPS.c.downstream_repo)
        ).all()
    return [(str(repo), str(sha)) for repo, sha in rows]
