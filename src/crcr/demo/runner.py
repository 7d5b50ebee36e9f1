"""Run the demo until its duration is up or Ctrl-C, showing progress all along."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
import webbrowser
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.live import Live

from crcr.demo.logs import capture_logs, release_logs
from crcr.demo.options import DemoOptions
from crcr.demo.progress import DemoProgress
from crcr.demo.stack import ALLOWLIST_FILE, DemoStack
from crcr.demo.view import closing_lines, live_view, override_lines, progress_line

LIVE_REFRESH = 0.5
PLAIN_EVERY = 5.0


@contextlib.contextmanager
def _stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """The first Ctrl-C (or SIGTERM) stops cleanly; a second one interrupts as usual."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []

    def first_signal() -> None:
        stop.set()
        for sig in installed:
            loop.remove_signal_handler(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, first_signal)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def _follow(
    stack: DemoStack,
    stop: asyncio.Event,
    deadline: float | None,
    show: Callable[[DemoProgress], None],
    every: float,
    errors: Callable[[], int],
) -> DemoProgress:
    """Show progress every `every` seconds until stopped or past the deadline."""
    while True:
        frame = await stack.progress()
        frame = DemoProgress(**{**frame.__dict__, "log_errors": errors()})
        show(frame)
        if stop.is_set() or (deadline is not None and time.monotonic() >= deadline):
            return frame
        pause = every if deadline is None else min(every, max(deadline - time.monotonic(), 0))
        await _wait(stop, pause)


async def run_demo(options: DemoOptions, console: Console) -> int:
    """Start everything, follow it, stop it; returns the exit status."""
    stack = DemoStack(options)
    options.data_dir.mkdir(parents=True, exist_ok=True)
    counter, handlers = capture_logs(options.data_dir)
    stop = asyncio.Event()
    try:
        with _stop_on_signals(stop):
            await stack.start()
            deadline = None if options.duration is None else time.monotonic() + options.duration
            console.print(f"crcr demo: dashboard at {stack.dashboard_url}", highlight=False)
            if options.open_browser:
                await asyncio.to_thread(webbrowser.open, stack.dashboard_url)
            if console.is_terminal:
                with Live(console=console, auto_refresh=False, transient=False) as live:
                    last = await _follow(
                        stack,
                        stop,
                        deadline,
                        lambda frame: live.update(live_view(frame), refresh=True),
                        LIVE_REFRESH,
                        lambda: counter.count,
                    )
            else:
                last = await _follow(
                    stack,
                    stop,
                    deadline,
                    lambda frame: console.print(
                        progress_line(frame), highlight=False, soft_wrap=True
                    ),
                    PLAIN_EVERY,
                    lambda: counter.count,
                )
            console.print("crcr demo: stopping…", highlight=False)
    finally:
        await stack.stop()
        release_logs(handlers)
    allowlist = str(options.data_dir / ALLOWLIST_FILE)
    for line in [
        *closing_lines(last, str(options.data_dir)),
        *override_lines(str(options.data_dir), allowlist),
    ]:
        console.print(line, highlight=False, soft_wrap=True)
    return 0
