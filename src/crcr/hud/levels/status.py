"""Every backend's level status: levels, measurements, verdicts and demotions, composed.

The one entry point of the level status: the JSON API, the page, `crcr levels status`
and the in-process relay (`Hud.level_status`) all read through `LevelStatusService`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from anyio import to_thread
from sqlalchemy import Engine, select

from crcr.config.level_criteria import LevelCriteria
from crcr.hud.levels.judge import Measurements, Verdict, judge, window_for
from crcr.hud.levels.measure import LevelSpan, level_history, measure
from crcr.hud.levels.providers import Demotion, DemotionLookup, LevelLookup
from crcr.hud.models import BACKENDS

LEVELS = ("L1", "L2", "L3", "L4")


@dataclass(frozen=True)
class BackendLevel:
    """One backend's level, verdict and level history."""

    repo: str
    level: str
    verdict: Verdict
    history: tuple[LevelSpan, ...]


@dataclass(frozen=True)
class LevelReport:
    """Every backend's status at `generated_at`; `demotions` is None without a lookup."""

    generated_at: datetime
    backends: tuple[BackendLevel, ...]
    demotions: Mapping[str, Demotion] | None

    def demotion_of(self, repo: str) -> Demotion | None:
        """The backend's temporary demotion, if any (repos compare without case)."""
        if self.demotions is None:
            return None
        wanted = repo.lower()
        return next((d for r, d in self.demotions.items() if r.lower() == wanted), None)


def read_backend_levels(
    engine: Engine, levels: Mapping[str, str] | None, criteria: LevelCriteria, now: datetime
) -> tuple[BackendLevel, ...]:
    """Judge every backend: those of `levels` (the allowlist) or else every one seen.

    The reads must see one snapshot: the median is found by rank in the histogram, then
    read from its bucket, and a result moved between buckets in between (a re-run
    replacing an attempt) would leave the rank pointing past the bucket's rows.
    PostgreSQL's default READ COMMITTED gives each statement its own snapshot.
    """
    options = {"isolation_level": "REPEATABLE READ"} if engine.dialect.name == "postgresql" else {}
    with engine.connect().execution_options(**options) as connection:
        seen = connection.execute(select(BACKENDS.c.repo, BACKENDS.c.level)).all()
        stored = {repo.lower(): repo for repo, _ in seen}
        if levels is None:
            levels = {repo: level for repo, level in seen if level in LEVELS}
        levels = {repo: level for repo, level in levels.items() if level in LEVELS}
        windows = {
            stored[repo.lower()]: window_for(level, criteria)
            for repo, level in levels.items()
            if repo.lower() in stored
        }
        history = level_history(connection)
        measured = measure(connection, windows, history, now)
    backends = []
    for repo, level in sorted(levels.items(), key=lambda item: item[0].lower()):
        found = measured.get(stored.get(repo.lower(), ""), Measurements())
        backends.append(
            BackendLevel(repo, level, judge(level, found, criteria), history.get(repo.lower(), ()))
        )
    return tuple(backends)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def level_status_json(report: LevelReport) -> dict[str, Any]:
    """SPEC §10.1's JSON of a report."""
    repos = []
    for backend in report.backends:
        verdict = backend.verdict
        demotion = report.demotion_of(backend.repo)
        repos.append(
            {
                "repo": backend.repo,
                "level": backend.level,
                "change": verdict.change,
                "noData": verdict.no_data,
                "windowDays": verdict.window_days,
                "criteria": [
                    {
                        "criterion": c.criterion,
                        "measured": c.measured,
                        "target": c.target,
                        "met": c.met,
                    }
                    for c in verdict.criteria
                ],
                "demoted": None
                if demotion is None
                else {"since": _iso(demotion.since), "pr_url": demotion.pr_url},
            }
        )
    return {"generated_at": _iso(report.generated_at), "repos": repos}


class LevelStatusService:
    """Reads the level status; the host may set `level_lookup` and `demotion_lookup`."""

    def __init__(
        self,
        engine: Engine,
        criteria: LevelCriteria,
        level_lookup: LevelLookup | None = None,
        demotion_lookup: DemotionLookup | None = None,
    ) -> None:
        self._engine = engine
        self.criteria = criteria
        self.level_lookup = level_lookup
        self.demotion_lookup = demotion_lookup

    async def report(self, now: datetime | None = None) -> LevelReport:
        """Every backend's level, verdict, history and demotion, as of `now`."""
        moment = now or datetime.now(UTC)
        found = None if self.level_lookup is None else await self.level_lookup()
        levels = None if found is None else dict(found)
        backends = await to_thread.run_sync(
            read_backend_levels, self._engine, levels, self.criteria, moment
        )
        lookup = self.demotion_lookup
        demotions = None if lookup is None else dict(await lookup.demotions())
        return LevelReport(generated_at=moment, backends=backends, demotions=demotions)

    async def status(self, now: datetime | None = None) -> dict[str, Any]:
        """SPEC §10.1's JSON."""
        return level_status_json(await self.report(now))
