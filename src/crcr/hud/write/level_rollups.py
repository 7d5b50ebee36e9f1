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

from crcr.hud.write.driver_sql import execute_many, fetch_rows, json_array
from crcr.hud.write.level_counted import (
    CountedJob,
    DayKey,
    LevelKey,
    counted_job,
    counts,
    daily_change,
    recounted,
    run_row,
)
from crcr.hud.write.level_statements import (
    COUNTED_KEY,
    LevelStatements,
    level_statements,
)
from crcr.hud.write.statements import RollupTable

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
        execute_many(connection, sql.touch_history, list(seen.values()))


def _recount(
    connection: Connection,
    sql: LevelStatements,
    pairs: Sequence[tuple[Mapping[str, Any] | None, Mapping[str, Any]]],
) -> None:
    commits: dict[LevelKey, str] = {}
    for _, row in pairs:
        commits[(row["downstream_repo"], row["run_id"], row["job_name"])] = row["head_sha"]
    keys = sorted(commits)
    stored: dict[LevelKey, CountedJob] = {}
    for row in _rows_of(connection, sql.select_counted, keys):
        stored[(row["downstream_repo"], row["run_id"], row["job_name"])] = CountedJob(**row)
    current, lost = recounted(stored, [row for _, row in pairs])
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
        execute_many(connection, sql.upsert_counted, upserts)
    if deletes:
        connection.execute(sql.delete_counted, deletes)
    _add(connection, sql.daily, changes, "jobs")
    runs = sorted({(key[0], key[1]) for key in keys if stored.get(key) != current.get(key)})
    if runs:
        _refresh_runs(connection, sql, runs)


def _add(
    connection: Connection,
    table: RollupTable,
    changes: Mapping[tuple[Any, ...], Mapping[str, int]],
    size: str,
) -> None:
    """Add each key's deltas to its rollup row; drop the rows left counting nothing."""
    deltas = {key: counters for key, counters in changes.items() if any(counters.values())}
    if not deltas:
        return
    execute_many(connection, table.add, [table.params(key, d) for key, d in deltas.items()])
    emptied = [
        dict(zip(table.key, key, strict=True))
        for key, counters in deltas.items()
        if counters.get(size, 0) < 0
    ]
    if emptied:
        connection.execute(table.drop_empty, emptied)


def _refresh_runs(
    connection: Connection, sql: LevelStatements, runs: list[tuple[str, str]]
) -> None:
    """Recompute each run's end-to-end time from its counted jobs; drop runs left with none.

    A minimum cannot be un-added, so a run is recomputed whole; its histogram entry
    moves from the stored row's (day, bucket) to the new one's.
    """
    buckets: dict[tuple[Any, ...], dict[str, int]] = {}
    for old in _rows_of(connection, sql.select_runs, runs):
        if old["e2e_bucket"] is not None:
            entry = buckets.setdefault(
                (old["downstream_repo"], old["day"], old["e2e_bucket"]), {"count": 0}
            )
            entry["count"] -= 1
    facts = {
        (found["downstream_repo"], found["run_id"]): found
        for found in _rows_of(connection, sql.run_facts, runs)
    }
    upserts, gone = [], []
    for repo, run_id in runs:
        run = facts.get((repo, run_id))
        if run is None:
            gone.append({"downstream_repo": repo, "run_id": run_id})
            continue
        row = run_row(run)
        upserts.append(row)
        if row["e2e_bucket"] is not None:
            entry = buckets.setdefault((repo, row["day"], row["e2e_bucket"]), {"count": 0})
            entry["count"] += 1
    if upserts:
        execute_many(connection, sql.upsert_run, upserts)
    if gone:
        connection.execute(sql.delete_run, gone)
    _add(connection, sql.e2e_buckets, buckets, "count")


def _rows_of(
    connection: Connection, select: Any, keys: Sequence[tuple[str, ...]]
) -> list[dict[str, Any]]:
    """The rows of a batch's `keys`, read with one select."""
    return fetch_rows(connection, select, {"keys": json_array(keys)})
