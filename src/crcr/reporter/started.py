"""Remember when a job reported `in_progress`, so its `completed` report can say so.

The two reports are separate `crcr report` processes (two workflow steps). GitHub
Actions gives each job a private `RUNNER_TEMP` that lives until the job ends, which is
exactly the lifetime this note needs; elsewhere `CRCR_STATE_DIR` can name a directory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from crcr.reporter.body import RunContext

STATE_DIR_VARIABLES = ("CRCR_STATE_DIR", "RUNNER_TEMP")


def state_file(env: Mapping[str, str], delivery_id: str, run: RunContext) -> Path | None:
    """Where this job's start time is kept, or None when there is nowhere to keep it."""
    directory = next((env[name] for name in STATE_DIR_VARIABLES if env.get(name)), None)
    if directory is None:
        return None
    job_key = "\0".join((delivery_id, run.run_id, run.run_attempt, run.job_name))
    digest = hashlib.sha256(job_key.encode()).hexdigest()[:24]
    return Path(directory) / f"crcr-report-{digest}.json"


def remember_started_at(path: Path | None, started_at: str) -> None:
    """Note the start time, keeping an earlier note for the same job.

    The first accepted `in_progress` is the one the relay recorded; a repeat (a
    retried step) must not move the start. Failing to write only costs the
    `completed` report its `started_at`.
    """
    if path is None:
        return
    try:
        with path.open("x", encoding="utf-8") as note:
            note.write(json.dumps({"started_at": started_at}))
    except OSError:
        return


def recall_started_at(path: Path | None) -> str | None:
    """The start time noted by this job's `in_progress` report, if there was one."""
    if path is None:
        return None
    try:
        note = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    started_at = note.get("started_at") if isinstance(note, dict) else None
    return started_at if isinstance(started_at, str) else None
