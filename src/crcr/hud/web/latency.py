"""The metrics page's content: per backend, queue and execution percentiles as charts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from markupsafe import Markup

from crcr.hud.reads.latency import LatencyPoint
from crcr.hud.web import charts, display


@dataclass(frozen=True)
class LatencyDay:
    """One day's percentiles as the charts draw them, for the table under the charts
    (their text alternative: what a screen reader or keyboard reader gets instead)."""

    day: date
    queue: tuple[float | None, float | None, float | None]
    execution: tuple[float | None, float | None, float | None]


@dataclass(frozen=True)
class LatencyPanel:
    """One backend's queue and execution charts on the metrics page, and their figures."""

    repo: str
    queue_samples: int
    execution_samples: int
    latest_queue_p50: float | None
    latest_execution_p50: float | None
    queue_chart: Markup
    execution_chart: Markup
    days: tuple[LatencyDay, ...] = ()


def _day_x(day: date) -> float:
    return datetime.combine(day, time(), tzinfo=UTC).timestamp()


def _x_label(x: float) -> str:
    return datetime.fromtimestamp(x, UTC).strftime("%b %d")


def window_days(window: int, today: date) -> tuple[date, ...]:
    """The whole UTC days of a window ending today, oldest first (as the queries count)."""
    return tuple(today - timedelta(days=offset) for offset in range(window - 1, -1, -1))


def latency_panels(
    points: Iterable[LatencyPoint], window: Sequence[date] = ()
) -> tuple[LatencyPanel, ...]:
    """One panel per backend, each with p50/p90/p99 lines for queue and execution time.

    Days of `window` without a point are drawn as gaps, so the x axis always spans the
    whole window and one busy day does not fill the chart.
    """
    by_repo: dict[str, dict[date, LatencyPoint]] = defaultdict(dict)
    for point in points:
        by_repo[point.repo][point.day] = point
    panels = []
    for repo in sorted(by_repo):
        known = by_repo[repo]
        if not any(p.queue_samples or p.execution_samples for p in known.values()):
            continue
        days = [known.get(day) or _no_samples(repo, day) for day in sorted({*window, *known})]
        panels.append(
            LatencyPanel(
                repo=repo,
                queue_samples=sum(p.queue_samples for p in days),
                execution_samples=sum(p.execution_samples for p in days),
                latest_queue_p50=_latest(p.queue_p50 for p in days),
                latest_execution_p50=_latest(p.execution_p50 for p in days),
                queue_chart=_percentile_chart(
                    f"{repo} queue time",
                    [(p.day, p.queue_p50, p.queue_p90, p.queue_p99) for p in days],
                ),
                execution_chart=_percentile_chart(
                    f"{repo} execution time",
                    [(p.day, p.execution_p50, p.execution_p90, p.execution_p99) for p in days],
                ),
                days=tuple(
                    LatencyDay(
                        p.day,
                        (p.queue_p50, p.queue_p90, p.queue_p99),
                        (p.execution_p50, p.execution_p90, p.execution_p99),
                    )
                    for p in days
                    if p.queue_samples or p.execution_samples
                ),
            )
        )
    return tuple(panels)


def _no_samples(repo: str, day: date) -> LatencyPoint:
    return LatencyPoint(repo, day, 0, None, None, None, 0, None, None, None)


def _latest(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return known[-1] if known else None


def _percentile_chart(
    title: str, rows: Sequence[tuple[date, float | None, float | None, float | None]]
) -> Markup:
    xs = [_day_x(row[0]) for row in rows]
    series = [
        charts.Series("p50", list(zip(xs, (row[1] for row in rows), strict=True))),
        charts.Series("p90", list(zip(xs, (row[2] for row in rows), strict=True))),
        charts.Series("p99", list(zip(xs, (row[3] for row in rows), strict=True))),
    ]
    # Two drawings, one shown per screen size (CSS): SVG text scales with the chart, so
    # a wide chart squeezed onto a phone would have unreadable labels.
    drawings = [
        f'<div class="{css}">'
        + charts.line_chart(
            series,
            title=title,
            format_y=display.duration_short,
            format_x=_x_label,
            y_steps=charts.DURATION_STEPS,
            width=width,
        )
        + "</div>"
        for css, width in (("chart-wide", 560), ("chart-narrow", 340))
    ]
    return Markup("".join(drawings))  # noqa: S704 - charts escape all text
