"""Small SVG charts drawn on the server, so the dashboard needs no chart library or JS.

Every function takes plain values and returns an SVG string that is safe to embed
(all text is escaped). Missing values (`None`) break a line rather than being drawn as
zero: a day without runs is not a day at 0 % pass rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from itertools import pairwise

Point = tuple[float, float | None]

# Colour-blind-safe palette (Okabe-Ito), in the order series are assigned colours.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442")

# Tick steps for durations in seconds: whole seconds, minutes and hours read better
# than 1-2-5 multiples of seconds (2000 s would label as "33m 20s").
DURATION_STEPS = (
    *(1, 2, 5, 10, 15, 30),
    *(60, 120, 300, 600, 900, 1800),
    *(3600, 7200, 10800, 21600, 43200, 86400),
)


@dataclass(frozen=True)
class Series:
    """One named line of a line chart."""

    name: str
    points: Sequence[Point]
    colour: str | None = None


def _num(value: float) -> str:
    """Format a coordinate compactly (SVG size matters when a page holds many charts)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _runs(points: Sequence[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """Split points into runs of consecutive known values."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((x, y))
    return [run for run in runs if run]


def sparkline(
    values: Sequence[float | None],
    *,
    width: int = 96,
    height: int = 24,
    low: float | None = None,
    high: float | None = None,
    label: str = "trend",
    colour: str = "currentColor",
) -> str:
    """Draw a tiny trend line for a table cell.

    `low`/`high` fix the vertical range (pass rates use 0-100 so that a flat 99 % and a
    flat 60 % do not look alike); otherwise it is fitted to the values.
    """
    known = [v for v in values if v is not None]
    title = f"<title>{escape(label)}</title>"
    head = (
        f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}">{title}'
    )
    if not known:
        mid = _num(height / 2)
        return (
            f'{head}<line x1="1" y1="{mid}" x2="{width - 1}" y2="{mid}" '
            f'stroke="currentColor" stroke-opacity="0.25" stroke-dasharray="2 3"/></svg>'
        )
    lo = min(known) if low is None else low
    hi = max(known) if high is None else high
    span = hi - lo or 1.0
    pad = 2.0
    step = (width - 2 * pad) / max(len(values) - 1, 1)

    def xy(i: float, v: float) -> tuple[float, float]:
        y = height - pad - (min(max(v, lo), hi) - lo) / span * (height - 2 * pad)
        return pad + i * step, y

    parts = [head]
    indexed: list[tuple[float, float | None]] = [(float(i), v) for i, v in enumerate(values)]
    runs = _runs(indexed)
    # Days without jobs are bridged by a faint dashed line, so a sparse trend still
    # reads as a trend while the gap stays visible.
    for before, after in pairwise(runs):
        (x1, y1), (x2, y2) = xy(*before[-1]), xy(*after[0])
        parts.append(
            f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
            f'stroke="{colour}" stroke-opacity="0.5" stroke-width="1" stroke-dasharray="2 2"/>'
        )
    for run in runs:
        if len(run) == 1:
            x, y = xy(*run[0])
            parts.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="1.75" fill="{colour}"/>')
            continue
        coords = " ".join(f"{_num(x)},{_num(y)}" for x, y in (xy(i, v) for i, v in run))
        parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{colour}" '
            f'stroke-width="1.5" stroke-linejoin="round" stroke-linecap="round"/>'
        )
    last_i = max(i for i, v in enumerate(values) if v is not None)
    last_v = values[last_i]
    assert last_v is not None
    x, y = xy(last_i, last_v)
    parts.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="2" fill="{colour}"/>')
    parts.append("</svg>")
    return "".join(parts)


def nice_ticks(
    low: float, high: float, *, count: int = 4, steps: Sequence[float] | None = None
) -> list[float]:
    """Pick round tick values covering [low, high], about `count` intervals.

    With `steps` the step is the smallest allowed one that needs no more than `count`
    intervals; otherwise it is a 1-2-5 multiple of a power of ten.
    """
    if high < low:
        low, high = high, low
    if high == low:
        high = low + 1.0
    raw = (high - low) / count
    if steps:
        step = next((s for s in steps if s >= raw), steps[-1])
        while (high - low) / step > count * 2:
            step *= 2
    else:
        magnitude = 10 ** math.floor(math.log10(raw))
        step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = [first]
    while ticks[-1] < high - 1e-9:
        ticks.append(ticks[-1] + step)
    return ticks


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    format_y: Callable[[float], str] = lambda v: f"{v:g}",
    format_x: Callable[[float], str] = lambda v: f"{v:g}",
    y_steps: Sequence[float] | None = None,
    y_min: float | None = 0.0,
    width: int = 560,
    height: int = 220,
) -> str:
    """Draw a line chart with axes, gridlines, a legend and a tooltip on every point."""
    left, right, top, bottom = 56.0, 28.0, 12.0, 26.0
    legend_h = 20.0 if series else 0.0
    plot_w = width - left - right
    plot_h = height - top - bottom - legend_h
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points if y is not None]
    svg = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    if not ys:
        svg.append(
            f'<text x="{width / 2:g}" y="{height / 2:g}" text-anchor="middle" '
            f'class="chart-empty">No data in this window</text></svg>'
        )
        return "".join(svg)
    y_lo = min(ys) if y_min is None else min(y_min, min(ys))
    ticks = nice_ticks(y_lo, max(ys), steps=y_steps)
    y_lo, y_hi = ticks[0], ticks[-1]
    x_lo, x_hi = min(xs), max(xs)
    x_span = (x_hi - x_lo) or 1.0

    def px(x: float) -> float:
        if x_hi == x_lo:
            return left + plot_w / 2
        return left + (x - x_lo) / x_span * plot_w

    def py(y: float) -> float:
        return top + plot_h - (y - y_lo) / ((y_hi - y_lo) or 1.0) * plot_h

    for tick in ticks:
        tick_y = _num(py(tick))
        svg.append(
            f'<line class="grid" x1="{_num(left)}" x2="{_num(left + plot_w)}" '
            f'y1="{tick_y}" y2="{tick_y}"/><text class="tick" x="{_num(left - 6)}" y="{tick_y}" '
            f'text-anchor="end" dominant-baseline="middle">{escape(format_y(tick))}</text>'
        )
    distinct_x = sorted(set(xs))
    stride = max(1, math.ceil(len(distinct_x) / 6))
    label_y = _num(top + plot_h + 16)
    for x in distinct_x[::stride]:
        svg.append(
            f'<text class="tick" x="{_num(px(x))}" y="{label_y}" '
            f'text-anchor="middle">{escape(format_x(x))}</text>'
        )
    svg.append(
        f'<line class="axis" x1="{_num(left)}" x2="{_num(left + plot_w)}" '
        f'y1="{_num(top + plot_h)}" y2="{_num(top + plot_h)}"/>'
    )
    colours = [s.colour or PALETTE[i % len(PALETTE)] for i, s in enumerate(series)]
    # Drawn last-first so the first series (e.g. the median) stays on top where lines meet.
    for s, colour in reversed(list(zip(series, colours, strict=True))):
        for run in _runs(s.points):
            if len(run) > 1:
                coords = " ".join(f"{_num(px(x))},{_num(py(y))}" for x, y in run)
                svg.append(
                    f'<polyline points="{coords}" fill="none" stroke="{colour}" '
                    f'stroke-width="2" stroke-linejoin="round"/>'
                )
        for x, y in s.points:
            if y is not None:
                tip = f"{s.name} · {format_x(x)}: {format_y(y)}"
                svg.append(
                    f'<circle cx="{_num(px(x))}" cy="{_num(py(y))}" r="3" fill="{colour}">'
                    f"<title>{escape(tip)}</title></circle>"
                )
    legend_x, legend_y = left, height - 6
    for s, colour in zip(series, colours, strict=True):
        svg.append(
            f'<rect x="{_num(legend_x)}" y="{_num(legend_y - 9)}" width="10" height="10" '
            f'rx="2" fill="{colour}"/><text class="legend" x="{_num(legend_x + 14)}" '
            f'y="{_num(legend_y)}">{escape(s.name)}</text>'
        )
        legend_x += 32 + 9 * len(s.name)
    svg.append("</svg>")
    return "".join(svg)
