"""Job columns on a backend's page: shards of one job collapse into one column.

`test-3` and `test (3, 8)` (also `test (default, 3, 8, linux.large)`, the PyTorch form)
are shards of `test`; the column shows the worst shard, because one red shard makes the
job red.
"""

from __future__ import annotations

import re

_DASH_SHARD = re.compile(r"^(?P<base>.+?)-(?P<index>\d{1,3})$")
_PAREN_SHARD = re.compile(
    r"^(?P<base>.+?)\s*\((?:[^,()]+,\s*)?(?P<index>\d+),\s*\d+(?:,[^()]*)?\)$"
)

# Worst first: what a collapsed column shows when its shards disagree.
_SEVERITY = {
    "failure": 9,
    "startup_failure": 9,
    "timed_out": 8,
    "cancelled": 7,
    "action_required": 6,
    "stale": 2,
    "neutral": 2,
    "success": 1,
    "skipped": 0,
}
_RUNNING = 5


def shard_base(job_name: str) -> str:
    """The job a shard belongs to (the name itself when it is not a shard)."""
    for pattern in (_PAREN_SHARD, _DASH_SHARD):
        match = pattern.match(job_name)
        if match:
            return match.group("base").strip()
    return job_name


def column_name(workflow_name: str, job_name: str) -> str:
    """The matrix column a job lands in."""
    base = shard_base(job_name)
    return f"{workflow_name} / {base}" if base else workflow_name


def severity(status: str, conclusion: str | None) -> int:
    """How bad a job's state is; running jobs rank above green and below red."""
    if status != "completed":
        return _RUNNING
    return _SEVERITY.get(conclusion or "", _RUNNING)
