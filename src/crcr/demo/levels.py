"""The demo's levels story: a fortnight of history first, then one backend slips and is demoted.

The history goes through the HUD's own ingest path before traffic starts (once per data
directory: a restarted demo keeps what it has). A little later the degrading backend's
workflow starts failing; within a few sweeper passes the level status says `demote`,
the relay stops its check runs and opens the allowlist pull request in the sandbox, and
`/crcr/levels` shows which criterion it missed. The L4 backend slips too, and its
maintainers say no: they close its demotion pull request unmerged, which declines the
demotion (SPEC §10.2) — `/crcr/levels` draws both episodes.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from crcr.demo.backends import DEGRADING_BACKEND, DEMO_BACKENDS, DEMO_UPSTREAM, degraded
from crcr.demo.history import history_bodies
from crcr.demo.traffic import UpstreamEvent
from crcr.hud.component import Hud
from crcr.relay.levels.proposals import branch_for
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.simulated_ci import SimulatedCI
from crcr.sandbox.webhooks import pull_request_event

log = logging.getLogger(__name__)

ALLOWLIST_PATH = ".github/crcr-allowlist.yml"
ALLOWLIST_URL = f"https://github.com/{DEMO_UPSTREAM}/blob/main/{ALLOWLIST_PATH}"
"""Where the demo's allowlist lives: in the sandbox's upstream, where its PRs are opened."""
DECLINING_BACKEND = "fabrikam/metal-ci"
"""The L4 backend whose demotion its maintainers decline in the demo."""
MAINTAINER = "demo-maintainer"
SYNC_INTERVAL = 20
"""Seconds between level syncs in the demo (an hour in a deployment)."""
CRITERIA = {"job_pass_rate": 75, "timeout_rate": 3}
"""The demo's level criteria (`CRCR_LEVEL_CRITERIA`), looser than SPEC §10's defaults.

Its upstream closes pull requests thirty times faster than people do, and every close
cancels the jobs still running for it: a cancelled job is a completed job that did not
pass, so the healthy backends hover near 90 %. At 75 % only the degrading one drops."""


async def backfill_history(hud: Hud, days: int, rng: random.Random) -> int:
    """Store `days` days of results through the HUD's ingest path; the number stored."""
    bodies = history_bodies(
        DEMO_BACKENDS,
        days=days,
        now=datetime.now(UTC),
        rng=rng,
        upstream=DEMO_UPSTREAM,
        slipping=DEGRADING_BACKEND,
    )
    stored = await hud.ingestor.ingest_received(bodies)
    log.info("demo history: %d results over %d days stored", stored, days)
    return stored


async def degrade_later(ci: SimulatedCI, after: float) -> None:
    """After `after` seconds, make the degrading backend fail most of its jobs."""
    await asyncio.sleep(after)
    # Every job fails from then on: one `passing → failing` alert, never a flapping one.
    workflow = ci.workflows[DEGRADING_BACKEND.lower()]
    ci.replace_workflow(DEGRADING_BACKEND, degraded(workflow, failure=1.0))
    log.info("demo: %s starts failing most of its jobs", DEGRADING_BACKEND)


async def decline_when_proposed(
    github: SandboxGitHub,
    deliver: Callable[[UpstreamEvent], Awaitable[None]],
    *,
    every: float = 2.0,
) -> None:
    """Close `DECLINING_BACKEND`'s demotion pull request unmerged once the relay opens it,
    and send GitHub's `closed` webhook: the relay ends the demotion and snoozes new ones."""
    branch = branch_for(DECLINING_BACKEND, demotion=True)
    while True:
        for pull in github.pulls(DEMO_UPSTREAM, state="open"):
            if pull["head"] == branch:
                closed = github.close_pull(DEMO_UPSTREAM, pull["number"])
                payload = pull_request_event(
                    "closed",
                    repo=DEMO_UPSTREAM,
                    number=closed["number"],
                    head_ref=branch,
                    author=MAINTAINER,
                    title=str(closed["title"]),
                )
                summary = f"#{closed['number']} closed: {DECLINING_BACKEND}'s demotion declined"
                await deliver(UpstreamEvent("pull_request", payload, summary))
                log.info("demo: %s declined the demotion of %s", MAINTAINER, DECLINING_BACKEND)
                return
        await asyncio.sleep(every)
