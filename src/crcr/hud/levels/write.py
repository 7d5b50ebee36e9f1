"""The level rollups' write path, run inside the job write's transaction.

After the job rows of a batch are written, `record_levels` moves each touched
(backend, run, job name) to the attempt that now counts, applies the net change to the
per-day level sums, recomputes the end-to-end time of each run that changed from its
counted jobs (a minimum cannot be un-added), and notes each backend's level history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from crcr.hud.levels.counted import (
    LEVEL_COUNTERS,
    CountedJob,
    DayKey,
    LevelKey,
    counted_job,
    counts,
    daily_change,
    end_to_end_ms,
    supersedes,
)
from crcr.hud.levels.statements import COUNTED_KEY, LevelStatements, level_statements

Write = tuple[Mapping[str, Any] | None, Mapping[str, Any], datetime]


def record_levels(connection: Connection, writes: Sequence[Write]) -> None:
    """Bring the level rollups and history up to date with rows just written.

    `writes` are (stored row or None, new row, time of the write), in write order.
    """
    sql = level_statements(connection.dialect.name)
    pairs = [(old, row) for old, row, _ in writes if counts(row) or (old and counts(old))]
    if pairs:
        _recount(connection, sql, pairs)
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for _, row, now in writes:
        level = row["downstream_repo_level"]
        if level is None:
            continue
        entry = seen.setdefault(
            (row["downstream_repo"], level),
            {"repo": row["downstream_repo"], "level": level, "first_seen_at": now},
        )
        entry["first_seen_at"] = min(entry["first_seen_at"], now)
        entry["last_seen_at"] = max(entry.get("last_seen_at", now), now)
    if seen:
        connection.execute(sql.touch_history, list(seen.values()))


def _recount(
    connection: Connection,
    sql: LevelStatements,
    pairs: Sequence[tuple[Mapping[str, Any] | None, Mapping[str, Any]]],
) -> None:
    commits: dict[LevelKey, str] = {}
    for _, row in pairs:
        commits[(row["downstream_repo"], row["run_id"], row["job_name"])] = row["head_sha"]
    keys = sorted(commits)
    result = connection.execute(sql.select_counted, {"keys": keys}).mappings()
    stored = {job.key: job for job in (CountedJob(**row) for row in result)}
    current: dict[LevelKey, CountedJob] = dict(stored)
    lost: set[LevelKey] = set()
    for _, row in pairs:
        key = (row["downstream_repo"], row["run_id"], row["job_name"])
        held = current.get(key)
        if counts(row):
            candidate = counted_job(row)
            if supersedes(candidate, held):
                current[key] = candidate
                lost.discard(key)
        elif held is not None and held.job_key == row["job_key"]:
            # The counted row stopped counting (its event type changed): rare enough
            # to pick again from the job rows, which are written already.
            del current[key]
            lost.add(key)
    for key in lost:
        found = (
            connection.execute(
                sql.latest_counting_row,
                {
                    "downstream_repo": key[0],
                    "head_sha": commits[key],
                    "run_id": key[1],
                    "job_name": key[2],
                },
            )
            .mappings()
            .first()
        )
        if found is not None:
            current[key] = counted_job(dict(found))
    changes: dict[DayKey, dict[str, int]] = {}
    upserts, deletes = [], []
    for key in keys:
        before, after = stored.get(key), current.get(key)
        if before == after:
            continue
        daily_change(before, after, changes)
        if after is None:
            deletes.append(dict(zip(COUNTED_KEY, key, strict=True)))
        else:
            upserts.append(after.as_row())
    if upserts:
        connection.execute(sql.upsert_counted, upserts)
    if deletes:
        connection.execute(sql.delete_counted, deletes)
    _add_daily(connection, sql, changes)
    runs = sorted({(key[0], key[1]) for key in keys if stored.get(key) != current.get(key)})
    if runs:
        _refresh_runs(connection, sql, runs)


def _add_daily(
    connection: Connection, sql: LevelStatements, changes: Mapping[DayKey, Mapping[str, int]]
) -> None:
    deltas = {key: counters for key, counters in changes.items() if any(counters.values())}
    if not deltas:
        return
    table = sql.daily
    connection.execute(
        table.add,
        [
            {"downstream_repo": repo, "day": day, **{c: d.get(c, 0) for c in LEVEL_COUNTERS}}
            for (repo, day), d in deltas.items()
        ],
    )
    emptied = [
        {"downstream_repo": repo, "day": day}
        for (repo, day), d in deltas.items()
        if d.get("jobs", 0) < 0
    ]
    if emptied:
        connection.execute(table.drop_empty, emptied)


def _refresh_runs(
    connection: Connection, sql: LevelStatements, runs: list[tuple[str, str]]
) -> None:
    """Recompute each run's end-to-end time from its counted jobs; drop runs left with none."""
    facts = connection.execute(sql.run_facts, {"runs": runs}).mappings().all()
    found = {(row["downstream_repo"], row["run_id"]) for row in facts}
    if facts:
        connection.execute(
            sql.upsert_run,
            [
                {
                    "downstream_repo": row["downstream_repo"],
                    "run_id": row["run_id"],
                    "day": row["day"],
                    "e2e_ms": end_to_end_ms(
                        row["first_start"], row["last_completion"], row["queue_ms"]
                    ),
                }
                for row in facts
            ],
        )
    gone = [{"downstream_repo": r, "run_id": i} for r, i in runs if (r, i) not in found]
    if gone:
        connection.execute(sql.delete_run, gone)
