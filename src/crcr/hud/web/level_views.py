"""Shape the level report for the levels page and the summary's verdict badges.

Pure functions over `crcr.hud.levels.status.LevelReport`, tested without a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from crcr.hud.levels.judge import CriterionResult
from crcr.hud.levels.measure import LevelSpan
from crcr.hud.levels.providers import Demotion, Episode, Standing
from crcr.hud.levels.status import BackendLevel, LevelReport

CRITERION_LABELS = {
    "job_pass_rate": "Job pass rate",
    "timeout_rate": "Timeout rate",
    "e2e_p50_hours": "End-to-end time, P50",
    "overrun_rate": "Overrun rate (over 3 h)",
    "avg_queue_minutes": "Average queue time",
    "days_at_l2": "Time at L2",
    "noise_rate": "Noise floor (A/A pairs that disagree)",
}
TIMELINE_MIN = timedelta(days=30)
_UNITS = {"e2e_p50_hours": " h", "avg_queue_minutes": " min", "days_at_l2": " days"}


@dataclass(frozen=True)
class Verdict:
    """A verdict as a badge: its word, its colour, and what it means."""

    key: str
    word: str
    tone: str
    title: str


@dataclass(frozen=True)
class CriterionLine:
    """One criterion of a backend, ready to show."""

    key: str
    label: str
    measured: str
    target: str
    met: bool | None


@dataclass(frozen=True)
class TimelineSegment:
    """A level's stretch on the history timeline, in percent of its width."""

    level: str
    x: float
    width: float
    first_seen_at: datetime
    last_seen_at: datetime


@dataclass(frozen=True)
class LevelRow:
    """One backend on the levels page."""

    repo: str
    level: str
    verdict: Verdict
    window_days: int
    criteria: tuple[CriterionLine, ...]
    timeline: tuple[TimelineSegment, ...]
    demotion: Demotion | None
    standing: Standing | None = None
    episodes: tuple[EpisodeBar, ...] = ()


EPISODE_LANES = ("level", "demotion", "decline", "override")
"""The timeline's rows, top to bottom: one per kind of episode (SPEC §10.2)."""
LANE_HEIGHT = 6


@dataclass(frozen=True)
class EpisodeBar:
    """An episode on the level-history timeline, in percent of its width; `lane` its row."""

    kind: str
    detail: str
    x: float
    width: float
    lane: int
    start: datetime
    end: datetime | None

    @property
    def y(self) -> int:
        """Its top, in the timeline's units."""
        return self.lane * LANE_HEIGHT


def episode_bars(episodes: tuple[Episode, ...], now: datetime) -> tuple[EpisodeBar, ...]:
    """Each episode between its start and its end (now while it lasts).

    The axis runs from the first start (at least `TIMELINE_MIN` back) to now, or to the
    latest planned end: a decline's snooze and an override end in the future.
    """
    if not episodes:
        return ()
    start = min(min(e.start for e in episodes), now - TIMELINE_MIN)
    stop = max([now, *(e.end for e in episodes if e.end is not None)])
    total = max((stop - start).total_seconds(), 1.0)
    bars = []
    for episode in sorted(episodes, key=lambda e: (EPISODE_LANES.index(e.kind), e.start)):
        end = episode.end or now
        width = max(0.5, 100 * (end - episode.start).total_seconds() / total)
        x = min(100 * (episode.start - start).total_seconds() / total, 100 - width)
        lane = EPISODE_LANES.index(episode.kind)
        bars.append(
            EpisodeBar(
                episode.kind,
                episode.detail,
                round(x, 2),
                round(width, 2),
                lane,
                episode.start,
                episode.end,
            )
        )
    return tuple(bars)


def verdict_of(backend: BackendLevel) -> Verdict:
    """The badge of a backend's verdict."""
    verdict = backend.verdict
    days = verdict.window_days
    if verdict.change == "demote":
        return Verdict("demote", "demote", "bad", f"A demotion criterion failed over {days} days")
    if verdict.change == "promote":
        return Verdict("promote", "ready for L3", "good", f"Every criterion met over {days} days")
    if backend.level == "L1":
        return Verdict("none", "not judged", "muted", "L1 backends report no results")
    if verdict.no_data:
        return Verdict("no-data", "no data", "muted", f"No completed PR job in {days} days")
    if backend.level == "L2":
        return Verdict("keep", "not ready", "muted", "Not every promotion criterion is met")
    return Verdict("keep", "healthy", "good", f"Every demotion criterion met over {days} days")


def criterion_line(result: CriterionResult) -> CriterionLine:
    """A criterion as the page shows it: "89.9%", "2.4 h", "31 days"."""
    name = result.criterion
    if result.measured is None:
        measured = "—"
    elif name == "noise_rate":  # a fraction (SPEC §14), shown as the others' percentages
        measured = f"{round(result.measured * 100, 1):g}%"
    elif name in _UNITS:
        measured = f"{result.measured:g}{_UNITS[name]}"
    else:
        measured = f"{result.measured:g}%"
    label = CRITERION_LABELS.get(name, name)
    return CriterionLine(name, label, measured, result.target, result.met)


def timeline(spans: tuple[LevelSpan, ...], now: datetime) -> tuple[TimelineSegment, ...]:
    """Each level's first-to-last-seen stretch, between the first report and now.

    The axis covers at least `TIMELINE_MIN` (30 days), so that a backend that started
    reporting an hour ago shows a sliver, not a full bar.
    """
    if not spans:
        return ()
    start = min(min(span.first_seen_at for span in spans), now - TIMELINE_MIN)
    total = (now - start).total_seconds()
    segments = []
    for span in sorted(spans, key=lambda s: s.first_seen_at):
        # At least 1 % wide, so that a level seen once still shows, and inside the bar.
        width = max(1.0, 100 * (span.last_seen_at - span.first_seen_at).total_seconds() / total)
        x = min(100 * (span.first_seen_at - start).total_seconds() / total, 100 - width)
        segments.append(
            TimelineSegment(
                span.level,
                round(x, 2),
                round(width, 2),
                span.first_seen_at,
                span.last_seen_at,
            )
        )
    return tuple(segments)


def level_rows(report: LevelReport) -> tuple[LevelRow, ...]:
    """Every backend, highest level first, then by name."""
    order = {"L4": 0, "L3": 1, "L2": 2, "L1": 3}
    backends = sorted(report.backends, key=lambda b: (order.get(b.level, 4), b.repo.lower()))
    return tuple(
        LevelRow(
            repo=backend.repo,
            level=backend.level,
            verdict=verdict_of(backend),
            window_days=backend.verdict.window_days,
            criteria=tuple(criterion_line(c) for c in backend.verdict.criteria),
            timeline=timeline(backend.history, report.generated_at),
            demotion=report.demotion_of(backend.repo),
            standing=(standing := report.standing_of(backend.repo)),
            episodes=episode_bars(standing.episodes if standing else (), report.generated_at),
        )
        for backend in backends
    )


def verdict_badges(report: LevelReport) -> dict[str, tuple[Verdict, Demotion | None]]:
    """Each backend's badge and demotion for the summary, keyed by lower-case repo."""
    return {
        backend.repo.lower(): (verdict_of(backend), report.demotion_of(backend.repo))
        for backend in report.backends
    }
