"""A bisection for the page tests: acme/flaky's confirmed culprit, drawn by the relay's view."""

from __future__ import annotations

import time
from typing import Any

from crcr.relay.culprits.record import Bisection, Commit, Purpose, Step, Verdict
from crcr.relay.culprits.report import culprit_view

BACKEND = "acme/flaky"
SHAS = [f"{n:x}" * 40 for n in range(1, 8)]
GOOD, CULPRIT = "0" * 40, SHAS[3]


def confirmed(now: float) -> Bisection:
    """Seven commits, the fourth the culprit: three bisect steps and the re-test."""
    titles = ["Tidy the dispatcher", "Vectorise the norm", "Cache the kernels"]
    titles += ["[inductor] Fuse the reduction", "Docs", "Bump a pin", "Rename a test"]
    commits = tuple(
        Commit(sha, f"{t} (#{1200 + n})")
        for n, (sha, t) in enumerate(zip(SHAS, titles, strict=True))
    )
    steps = (
        Step(1, 2, SHAS[2], "crcr-bisect-1", Purpose.BISECT, now - 3000, "success"),
        Step(2, 4, SHAS[4], "crcr-bisect-2", Purpose.BISECT, now - 2200, "failure"),
        Step(3, 3, SHAS[3], "crcr-bisect-3", Purpose.BISECT, now - 1400, "failure"),
        Step(4, 3, SHAS[3], "crcr-bisect-4", Purpose.CONFIRM, now - 600, "failure"),
    )
    return Bisection(
        repo=BACKEND,
        good=GOOD,
        bad=SHAS[-1],
        commits=commits,
        started_at=now - 3100,
        verdict=Verdict.CONFIRMED,
        culprit=CULPRIT,
        confirmed=True,
        steps=steps,
        ended_at=now - 60,
    )


async def lookup(repo: str) -> list[dict[str, Any]]:
    """The backend page's bisections: acme/flaky's one, nobody else's."""
    now = time.time()
    return [culprit_view(confirmed(now), now)] if repo.lower() == BACKEND else []
