"""Every backend's level status: levels, measurements, verdicts and standings, composed.

The one entry point of the level status: the JSON API, the levels page, the backend
page, `crcr levels status`, `crcr doctor` and the in-process relay (`Hud.level_status`)
all read through `LevelStatusService` (SPEC §10.2 invariant 4): the levels come from
the host's `level_lookup` (the allowlist), each backend's standing — demotion, decline,
override, episodes — from its `governance_lookup` (the relay's state store).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from anyio import to_thread
from sqlalchemy import Engine, select

from crcr.config.level_criteria import LevelCriteria
from crcr.hud.levels.judge import Measurements, Verdict, judge, window_for
from crcr.hud.levels.measure import LevelSpan, level_history, measure
from crcr.hud.levels.noise import noise_rates, with_noise
from crcr.hud.levels.providers import (
    Demotion,
    DemotionLookup,
    GovernanceLookup,
    LevelLookup,
    Standing,
)
from crcr.hud.models import BACKENDS

LEVELS = ("L1", "L2", "L3", "L4")
_T = TypeVar("_T")


@dataclass(frozen=True)
class BackendLevel:
    """One backend's level, verdict and level history."""

    repo: str
    level: str
    verdict: Verdict
    history: tuple[LevelSpan, ...]


@dataclass(frozen=True)
class LevelReport:
    """Every backend's status at `generated_at`; `demotions` is None without a lookup.

    `standings` (the relay's, when it runs beside the HUD) says more than `demotions`
    and is read first.
    """

    generated_at: datetime
    backends: tuple[BackendLevel, ...]
    demotions: Mapping[str, Demotion] | None
    standings: Mapping[str, Standing] | None = None

    def standing_of(self, repo: str) -> Standing | None:
        """The backend's standing, if the host said it (repos compare without case)."""
        return _by_repo(self.standings, repo)

    def demotion_of(self, repo: str) -> Demotion | None:
        """The backend's temporary demotion, if any (repos compare without case)."""
        standing = self.standing_of(repo)
        if standing is not None:
            return standing.demotion
        return _by_repo(self.demotions, repo)


def _by_repo(found: Mapping[str, _T] | None, repo: str) -> _T | None:
    if found is None:
        return None
    wanted = repo.lower()
    return next((value for key, value in found.items() if key.lower() == wanted), None)


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
        noise = noise_rates(connection, list(windows), now)
    backends = []
    for repo, level in sorted(levels.items(), key=lambda item: item[0].lower()):
        found = measured.get(stored.get(repo.lower(), ""), Measurements())
        noise_rate = noise.get(stored.get(repo.lower(), ""))
        verdict = with_noise(judge(level, found, criteria), noise_rate)
        backends.append(BackendLevel(repo, level, verdict, history.get(repo.lower(), ())))
    return tuple(backends)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def standing_json(level: str, standing: Standing | None) -> dict[str, Any]:
    """SPEC §10.2's fields of a backend's standing: declined, override, the episodes."""
    if standing is None:
        return {"effectiveLevel": level, "declined": None, "override": None, "episodes": []}
    declined, override = standing.declined, standing.override
    return {
        "effectiveLevel": standing.treated_as,
        "declined": None
        if declined is None
        else {"by": declined.by, "at": _iso(declined.at), "until": _iso(declined.until)},
        "override": None
        if override is None
        else {
            "level": override.level,
            "until": _iso(override.until),
            "reason": override.reason,
            "by": override.by,
        },
        "episodes": [
            {
                "kind": e.kind,
                "start": _iso(e.start),
                "end": None if e.end is None else _iso(e.end),
                "detail": e.detail,
            }
            for e in standing.episodes
        ],
    }


def level_status_json(report: LevelReport) -> dict[str, Any]:
    """SPEC §10.1's JSON of a report, with §10.2's standing of each backend."""
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
                **standing_json(backend.level, report.standing_of(backend.repo)),
            }
        )
    return {"generated_at": _iso(report.generated_at), "repos": repos}


class LevelStatusService:
    """Reads the level status; the host may set `level_lookup` and `governance_lookup`.

    (`demotion_lookup` is the narrower lookup of a host that keeps demotions only.)
    """

    def __init__(
        self,
        engine: Engine,
        criteria: LevelCriteria,
        level_lookup: LevelLookup | None = None,
        demotion_lookup: DemotionLookup | None = None,
        governance_lookup: GovernanceLookup | None = None,
    ) -> None:
        self._engine = engine
        self.criteria = criteria
        self.level_lookup = level_lookup
        self.demotion_lookup = demotion_lookup
        self.governance_lookup = governance_lookup

    async def report(self, now: datetime | None = None) -> LevelReport:
        """Every backend's level, verdict, history and demotion, as of `now`."""
        moment = now or datetime.now(UTC)
        found = None if self.level_lookup is None else await self.level_lookup()
        levels = None if found is None else dict(found)
        backends = await to_thread.run_sync(
            read_backend_levels, self._engine, levels, self.criteria, moment
        )
        standings = await self.standings()
        lookup = self.demotion_lookup
        demotions = None if lookup is None else dict(await lookup.demotions())
        return LevelReport(moment, backends, demotions, standings)

    async def standings(self) -> Mapping[str, Standing] | None:
        """Every backend's standing, without measuring anything (None without a lookup).

        Cheap: the backend page and `crcr doctor` read it on every request.
        """
        lookup = self.governance_lookup
        return None if lookup is None else dict(await lookup.standings())

    async def standing(self, repo: str) -> Standing | None:
        """One backend's standing (None without a lookup, or for a repo not listed)."""
        return _by_repo(await self.standings(), repo)

    async def status(self, now: datetime | None = None) -> dict[str, Any]:
        """SPEC §10.1's JSON."""
        return level_status_json(await self.report(now))
