"""The progress display: the live table and the plain lines say the same things."""

from __future__ import annotations

from rich.console import Console

from crcr.demo.progress import DemoProgress, HudCounts
from crcr.demo.view import closing_lines, live_view, progress_line
from crcr.sandbox.simulated_ci_state import SimulationSnapshot


def frame(**changes: object) -> DemoProgress:
    values: dict[str, object] = {
        "elapsed": 75.4,
        "dashboard_url": "http://127.0.0.1:8000/crcr",
        "events_sent": 14,
        "last_event": "PR #150003 labelled ciflow/crcr/xpu",
        "dispatches": 96,
        "webhook_errors": 0,
        "ci": SimulationSnapshot(
            runs_started=90,
            jobs_queued=4,
            jobs_running=21,
            jobs_hanging=1,
            jobs_finished=160,
            conclusions={"success": 150, "failure": 7, "cancelled": 3},
            reports_sent=342,
            report_errors=0,
            last_error=None,
        ),
        "hud": HudCounts(completed=120, failures=5, timed_out=1, in_progress=17, backends=6),
        "retry_queue": 2,
        "first_result_after": 4.25,
    }
    values.update(changes)
    return DemoProgress(**values)  # type: ignore[arg-type]


def rendered(progress: DemoProgress) -> str:
    console = Console(record=True, width=110, color_system=None)
    console.print(live_view(progress))
    return console.export_text()


def test_the_live_view_shows_every_figure_and_the_dashboard_url() -> None:
    text = rendered(frame())
    for expected in (
        "crcr demo · 1:15",
        "http://127.0.0.1:8000/crcr",
        "14 (last: PR #150003 labelled ciflow/crcr/xpu)",
        "Dispatches relayed  96",
        "4 queued · 21 running · 160 finished · 1 hanging",
        "150 passed · 7 failed · 3 cancelled",
        "120 completed today (5 failures, 1 timed out) · 17 in progress",
        "Retry queue         2",
        "First result        4.2 s after start",
    ):
        assert expected in text, expected
    assert "Problems" not in text


def test_problems_appear_only_when_something_went_wrong() -> None:
    text = rendered(frame(webhook_errors=2, log_errors=1))
    assert "Problems" in text and "3 (last: see demo.log)" in text


def test_before_the_first_result_the_view_says_it_is_waiting() -> None:
    assert "waiting for the first job to finish" in rendered(frame(first_result_after=None))


def test_a_plain_line_carries_the_same_figures() -> None:
    assert progress_line(frame(retry_queue=None)) == (
        "[1:15] events 14 · dispatches 96 · jobs running 21 finished 160 failed 7 hanging 1 · "
        "dashboard rows 120 · retry queue ? · errors 0 · first result 4.2 s after start"
    )
    assert "first result" not in progress_line(frame(first_result_after=None))


def test_the_closing_lines_sum_up_and_say_where_the_data_is() -> None:
    lines = closing_lines(frame(), "crcr-data")
    assert lines[0].startswith("crcr demo stopped after 1:15: 14 upstream events, 96 dispatches")
    assert lines[1] == "First result on the dashboard 4.2 s after start."
    assert lines[2] == "Errors: 0. Data kept in crcr-data (log: crcr-data/demo.log)."


def test_an_open_level_change_shows_with_where_to_read_why() -> None:
    change = "#1 [CRCR] Demote lumen-ai/mlu-torch from L3 to L2"
    text = rendered(frame(level_changes=(change,)))
    assert change in text and "(why: http://127.0.0.1:8000/crcr/levels)" in text
    assert "Level changes" not in rendered(frame())
    lines = closing_lines(frame(level_changes=(change,)), "crcr-data")
    assert f"Pull request open in the sandbox: {change} (why: /crcr/levels)." in lines
