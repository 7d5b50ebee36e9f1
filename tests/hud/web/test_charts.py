"""The server-drawn SVG charts: well-formed, scaled, escaped, honest about gaps."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from crcr.hud.web import charts

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def polyline_points(root: ET.Element) -> list[list[tuple[float, float]]]:
    lines = []
    for line in root.iter(f"{SVG}polyline"):
        pairs = line.attrib["points"].split()
        lines.append([tuple(float(v) for v in pair.split(",")) for pair in pairs])
    return lines  # type: ignore[return-value]


def test_a_sparkline_is_valid_svg_with_an_accessible_label() -> None:
    root = parse(charts.sparkline([90, 95, 100], label="pass rate"))
    assert root.attrib["role"] == "img"
    assert root.attrib["aria-label"] == "pass rate"
    assert root.find(f"{SVG}title").text == "pass rate"  # type: ignore[union-attr]


def test_a_sparkline_on_a_fixed_scale_puts_100_at_the_top_and_0_at_the_bottom() -> None:
    root = parse(charts.sparkline([0, 100], width=50, height=20, low=0, high=100))
    [[start, end]] = polyline_points(root)
    assert start[1] > end[1]  # SVG y grows downwards
    assert start[1] == 18 and end[1] == 2  # 2 px padding inside 20 px


def test_a_missing_day_is_bridged_by_a_dashed_line_instead_of_dropping_to_zero() -> None:
    root = parse(charts.sparkline([100, 100, None, 50, 50], width=50, height=20, low=0, high=100))
    lines = polyline_points(root)
    assert len(lines) == 2
    assert all(len(line) == 2 for line in lines)
    [bridge] = list(root.iter(f"{SVG}line"))
    assert bridge.attrib["stroke-dasharray"]
    assert float(bridge.attrib["y1"]) == 2 and float(bridge.attrib["y2"]) == 10  # 100 → 50


def test_an_isolated_day_is_drawn_as_a_dot() -> None:
    root = parse(charts.sparkline([None, 80, None], low=0, high=100))
    assert polyline_points(root) == []
    assert list(root.iter(f"{SVG}line")) == []
    assert len(list(root.iter(f"{SVG}circle"))) == 2  # the point and the "latest" marker


def test_a_sparkline_without_data_is_a_faint_dashed_line() -> None:
    root = parse(charts.sparkline([None, None], label="no data"))
    [line] = list(root.iter(f"{SVG}line"))
    assert line.attrib["stroke-dasharray"]
    assert list(root.iter(f"{SVG}polyline")) == []


def test_labels_are_escaped() -> None:
    svg = charts.sparkline([1], label='<script>alert("x")</script>')
    assert "<script>" not in svg
    parse(svg)


def test_nice_ticks_are_round_numbers_covering_the_range() -> None:
    assert charts.nice_ticks(0, 97) == [0, 50, 100]
    assert charts.nice_ticks(0, 9) == [0, 5, 10]
    assert charts.nice_ticks(0, 7.5) == [0, 2, 4, 6, 8]
    ticks = charts.nice_ticks(3, 1234)
    assert ticks[0] <= 3 and ticks[-1] >= 1234


def test_duration_ticks_land_on_whole_minutes_and_hours() -> None:
    ticks = charts.nice_ticks(0, 2000, steps=charts.DURATION_STEPS)
    assert ticks == [0, 600, 1200, 1800, 2400]
    hours = charts.nice_ticks(0, 5 * 3600, steps=charts.DURATION_STEPS)
    assert all(t % 3600 == 0 for t in hours)


def test_a_line_chart_has_axes_a_legend_and_a_tooltip_per_point() -> None:
    series = [
        charts.Series("p50", [(0, 10.0), (1, 20.0), (2, 15.0)]),
        charts.Series("p99", [(0, 40.0), (1, None), (2, 60.0)]),
    ]
    svg = charts.line_chart(series, title="queue", format_x=lambda x: f"day {x:g}")
    root = parse(svg)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "p50" in texts and "p99" in texts
    assert "day 0" in texts and "day 2" in texts
    assert "0" in texts  # y axis starts at zero by default
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert "p99 · day 2: 60" in tips
    assert len([t for t in tips if t and t.startswith("p99")]) == 2  # the gap has no point
    # p99 has a gap in the middle: no line is drawn across it
    assert len(polyline_points(root)) == 1


def test_a_line_chart_keeps_every_point_inside_the_plot() -> None:
    series = [charts.Series("a", [(x, float(x * x)) for x in range(10)])]
    root = parse(charts.line_chart(series, title="t", width=400, height=200))
    for circle in root.iter(f"{SVG}circle"):
        assert 0 <= float(circle.attrib["cx"]) <= 400
        assert 0 <= float(circle.attrib["cy"]) <= 200


def test_an_empty_line_chart_says_so() -> None:
    svg = charts.line_chart([charts.Series("p50", [(0, None)])], title="queue")
    assert "No data in this window" in svg
    parse(svg)


def test_coordinates_are_compact() -> None:
    svg = charts.sparkline([1, 2, 3, 4], low=0, high=4)
    assert not re.search(r"\d\.\d{2,}", svg)
