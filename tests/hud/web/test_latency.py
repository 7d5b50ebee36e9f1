"""The metrics page's content: percentile charts spanning the window."""

from __future__ import annotations

from tests.hud.web import samples

from crcr.hud.web import latency


def test_latency_panels_skip_backends_without_samples() -> None:
    points = [
        samples.latency("org/a", samples.DAYS[0], 10.0),
        samples.latency("org/a", samples.DAYS[1], None),
        samples.latency("org/a", samples.DAYS[2], 30.0),
        samples.latency("org/quiet", samples.DAYS[0], None),
    ]
    window = latency.window_days(7, samples.DAYS[-1])
    assert window == samples.DAYS
    [panel] = latency.latency_panels(points, window)
    assert panel.repo == "org/a"
    assert "Mar 10" in panel.queue_chart  # the axis spans the window, not just the data
    assert panel.queue_samples == 10
    assert panel.latest_queue_p50 == 30.0
    assert "p90" in panel.queue_chart and "Mar 06" in panel.queue_chart


def test_each_chart_is_drawn_for_wide_and_narrow_screens() -> None:
    [panel] = latency.latency_panels([samples.latency("org/a", samples.DAYS[0], 10.0)])
    assert panel.execution_chart.count('<svg class="chart"') == 2
    assert 'class="chart-wide"' in panel.execution_chart
    assert 'class="chart-narrow"' in panel.execution_chart


def test_the_figures_behind_the_charts_come_with_them_as_a_table() -> None:
    points = [
        samples.latency("org/a", samples.DAYS[0], 10.0),
        samples.latency("org/a", samples.DAYS[2], 30.0),
    ]
    [panel] = latency.latency_panels(points, latency.window_days(7, samples.DAYS[-1]))
    # Days with samples only: the table lists what the charts draw, not the empty days.
    assert [day.day for day in panel.days] == [samples.DAYS[0], samples.DAYS[2]]
    assert panel.days[1].queue == (30.0, 60.0, 120.0)
    assert panel.days[1].execution == (1800.0, 2700.0, 3600.0)
