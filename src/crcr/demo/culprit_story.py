"""The demo's "who broke main" story (SPEC §14): a merge breaks one backend, the relay finds it.

A little after start-up the upstream's main gets a base commit, pushed and passed by
every backend; then six pull requests land at once and are pushed together, and the
fourth one breaks `BREAKING_BACKEND` (the simulated backend is told "broken from" that
commit). The backend turns `failing`, the leader bisects the six commits on it alone,
and its page on the dashboard shows the culprit with its pull request a few minutes in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from sqlalchemy import Engine

from crcr.demo.backends import DEMO_UPSTREAM
from crcr.demo.traffic import UpstreamEvent
from crcr.hud.reads.culprits import push_results
from crcr.sandbox.github_history import land_commit
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.simulated_ci import SimulatedCI
from crcr.sandbox.webhooks import branch_push

log = logging.getLogger(__name__)

BREAKING_BACKEND = "northwind/xpu-backend"
"""The backend a merged pull request breaks in the demo."""
TITLES = (
    "[inductor] Cache compiled kernels per device",
    "[docs] Explain the dispatcher's fallthrough",
    "[optim] Vectorise the Adam step",
    "[aten] Fuse the reduction in layer_norm",
    "[test] Skip a slow test on Windows",
    "[build] Bump the protobuf pin",
)
CULPRIT_AT = 3
"""The fourth of the six pull requests breaks the backend."""
FIRST_PR = 9101
MAX_POLLS = 600


async def base_passed(engine: Engine, sha: str, jobs: int) -> bool:
    """Whether the breaking backend reported every job of the base commit's push."""
    found = await asyncio.to_thread(push_results, engine, BREAKING_BACKEND, 100)
    return sum(1 for row in found if row.head_sha == sha) >= jobs


async def break_main_later(
    github: SandboxGitHub,
    ci: SimulatedCI,
    deliver: Callable[[UpstreamEvent], Awaitable[None]],
    engine: Engine,
    *,
    after: float,
    poll: float = 1.0,
) -> None:
    """After `after` seconds, land and push a good base, then the six PRs that break main."""
    await asyncio.sleep(after)
    spec = ci.workflows[BREAKING_BACKEND.lower()]
    base = land_commit(github, DEMO_UPSTREAM, "[ci] Pin the runner image", pr_number=FIRST_PR - 1)
    ci.broken_from[BREAKING_BACKEND.lower()] = "0" * 40  # deterministic from now: passes
    await deliver(_push(base, before=None, summary="push to main: a good base"))
    for _ in range(MAX_POLLS):  # the base's results on the backend: the last good push
        if await base_passed(engine, base, len(spec.job_names())):
            break
        await asyncio.sleep(poll)
    landed = [
        land_commit(github, DEMO_UPSTREAM, title, pr_number=FIRST_PR + n)
        for n, title in enumerate(TITLES)
    ]
    ci.broken_from[BREAKING_BACKEND.lower()] = landed[CULPRIT_AT]
    log.info(
        "demo: #%d breaks %s; six pull requests are pushed to main together",
        FIRST_PR + CULPRIT_AT,
        BREAKING_BACKEND,
    )
    await deliver(_push(landed[-1], before=base, summary="push to main: six merged PRs"))


def remember_push(github: SandboxGitHub, event: UpstreamEvent) -> None:
    """Land a pushed commit the sandbox's history does not know yet (the demo traffic's
    made-up pushes), so every push to main is a real commit the compare API can list."""
    if event.event != "push" or event.payload.get("ref") != "refs/heads/main":
        return
    sha = str(event.payload.get("after") or "").lower()
    with github.lock:
        known = sha in github.repo(DEMO_UPSTREAM).commits
    if sha and not known:
        land_commit(github, DEMO_UPSTREAM, "A change pushed to main", sha=sha)


def _push(sha: str, *, before: str | None, summary: str) -> UpstreamEvent:
    payload = branch_push("main", repo=DEMO_UPSTREAM, before=before, after=sha)
    return UpstreamEvent("push", payload, f"{summary} ({sha[:7]})")
