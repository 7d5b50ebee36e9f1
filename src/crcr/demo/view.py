"""The demo's progress display: a rich table for terminals, plain lines for pipes and CI."""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from crcr.demo.progress import DemoProgress


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:d}:{secs:02d}"


def _queue(progress: DemoProgress) -> str:
    return "?" if progress.retry_queue is None else str(progress.retry_queue)


def _first_result(progress: DemoProgress) -> str:
    if progress.first_result_after is None:
        return "waiting for the first job to finish…"
    return f"{progress.first_result_after:.1f} s after start"


def live_view(progress: DemoProgress) -> Panel:
    """The table a terminal shows, redrawn in place."""
    ci = progress.ci
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Dashboard", Text(progress.dashboard_url, style="link " + progress.dashboard_url))
    table.add_row("Upstream events", f"{progress.events_sent} (last: {progress.last_event or '-'})")
    table.add_row("Dispatches relayed", str(progress.dispatches))
    table.add_row(
        "Jobs",
        f"{ci.jobs_queued} queued · {ci.jobs_running} running · {ci.jobs_finished} finished"
        f" · {ci.jobs_hanging} hanging",
    )
    table.add_row(
        "Results",
        f"{ci.conclusions.get('success', 0)} passed · {ci.failures} failed · "
        f"{ci.conclusions.get('cancelled', 0)} cancelled",
    )
    table.add_row(
        "On the dashboard",
        f"{progress.hud.completed} completed today ({progress.hud.failures} failures, "
        f"{progress.hud.timed_out} timed out) · {progress.hud.in_progress} in progress",
    )
    table.add_row("Retry queue", _queue(progress))
    table.add_row("First result", _first_result(progress))
    if progress.level_changes:
        changes = "\n".join(progress.level_changes)
        table.add_row("Level changes", f"{changes}\n(why: {progress.dashboard_url}/levels)")
    if progress.alerts:
        shown = "\n".join(progress.alerts[-5:])
        table.add_row("Alerts", f"{shown}\n(all: {progress.dashboard_url}/alerts)")
    problems = ci.report_errors + progress.webhook_errors + progress.log_errors
    if problems:
        table.add_row(
            Text("Problems", style="bold red"),
            Text(f"{problems} (last: {ci.last_error or 'see demo.log'})", style="red"),
        )
    footer = Text("Ctrl-C stops the demo; the data stays for next time.", style="dim")
    return Panel(
        Group(table, footer),
        title=f"crcr demo · {_clock(progress.elapsed)}",
        border_style="cyan",
    )


def progress_line(progress: DemoProgress) -> str:
    """One plain line for logs and pipes (with the first result's time once there is one,
    so a piped run shows when the loop closed, as the terminal view does)."""
    ci = progress.ci
    first = (
        "" if progress.first_result_after is None else f" · first result {_first_result(progress)}"
    )
    return (
        f"[{_clock(progress.elapsed)}] events {progress.events_sent} · "
        f"dispatches {progress.dispatches} · jobs running {ci.jobs_running} "
        f"finished {ci.jobs_finished} failed {ci.failures} hanging {ci.jobs_hanging} · "
        f"dashboard rows {progress.hud.completed} · retry queue {_queue(progress)} · "
        f"errors {ci.report_errors + progress.webhook_errors + progress.log_errors}{first}"
    )


def override_lines(data_dir: str, allowlist: str) -> list[str]:
    """How to try an override (SPEC §10.2) on the demo's data; it shows on `/crcr/levels`
    within seconds of being set while a demo runs on that data, or from the next start."""
    settings = f"CRCR_DATA_DIR={data_dir} CRCR_ALLOWLIST={allowlist}"
    return [
        "Try an override (from another terminal while a demo runs, or now):",
        f"  {settings} crcr levels override fabrikam/metal-ci --level L3 --for 3d "
        '--reason "runner fleet migration" --by you',
        f"  {settings} crcr levels status",
        f"  {settings} crcr levels override --clear fabrikam/metal-ci --by you",
    ]


def closing_lines(progress: DemoProgress, data_dir: str) -> list[str]:
    """What stays on screen after the demo stops."""
    ci = progress.ci
    lines = [
        f"crcr demo stopped after {_clock(progress.elapsed)}: {progress.events_sent} upstream "
        f"events, {progress.dispatches} dispatches, {ci.jobs_finished} jobs finished, "
        f"{progress.hud.completed} results on the dashboard today.",
    ]
    if progress.first_result_after is not None:
        lines.append(f"First result on the dashboard {_first_result(progress)}.")
    for change in progress.level_changes:
        lines.append(f"Pull request open in the sandbox: {change} (why: /crcr/levels).")
    for alert in progress.alerts:
        lines.append(f"Alert received by the demo's sink: {alert} (see /crcr/alerts).")
    errors = ci.report_errors + progress.webhook_errors + progress.log_errors
    lines.append(f"Errors: {errors}. Data kept in {data_dir} (log: {data_dir}/demo.log).")
    return lines
