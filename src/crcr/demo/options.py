"""`crcr demo` options, checked before anything starts: each mistake is one line naming it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

MAX_RATE = 6000.0
MAX_SPEED = 10_000.0
MAX_HISTORY_DAYS = 90


class OptionError(ValueError):
    """An option's value is unusable; the message names the option."""


@dataclass(frozen=True)
class DemoOptions:
    """What the demo runs with."""

    duration: float | None = None
    rate: float = 12.0
    speed: float = 30.0
    port: int = 8000
    data_dir: Path = Path("./crcr-data")
    open_browser: bool = False
    host: str = "127.0.0.1"
    seed: int | None = None
    history_days: int = 14
    degrade_after: float = 20.0


def _number(option: str, raw: str, meaning: str, *, ceiling: float) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise OptionError(f"{option} must be {meaning}, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise OptionError(f"{option} must be {meaning} greater than 0, got {raw!r}")
    if value > ceiling:
        raise OptionError(f"{option} must be at most {ceiling:g}, got {raw!r}")
    return value


def _port(raw: str) -> int:
    if not raw.strip().isdigit() or int(raw) > 65535:
        raise OptionError(f"--port must be a TCP port between 0 and 65535, got {raw!r}")
    return int(raw)


def _data_dir(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not raw.strip():
        raise OptionError("--data-dir must name a directory, got ''")
    if path.exists() and not path.is_dir():
        raise OptionError(f"--data-dir must be a directory, but {raw!r} is a file")
    return path


def _history(raw: str) -> int:
    if not raw.strip().isdigit() or int(raw) > MAX_HISTORY_DAYS:
        raise OptionError(
            f"--history must be a number of days from 0 to {MAX_HISTORY_DAYS}, got {raw!r}"
        )
    return int(raw)


def parse_options(
    *,
    duration: str | None,
    rate: str,
    speed: str,
    port: str,
    data_dir: str,
    open_browser: bool | None,
    interactive: bool,
    seed: int | None = None,
    history: str = "14",
) -> DemoOptions:
    """Check the raw command-line values; the browser opens by default only in a terminal."""
    return DemoOptions(
        duration=(
            None
            if duration is None
            else _number("--duration", duration, "a number of seconds", ceiling=math.inf)
        ),
        rate=_number("--rate", rate, "a number of events per minute", ceiling=MAX_RATE),
        speed=_number("--speed", speed, "a time-compression factor", ceiling=MAX_SPEED),
        port=_port(port),
        data_dir=_data_dir(data_dir),
        open_browser=interactive if open_browser is None else open_browser,
        seed=seed,
        history_days=_history(history),
    )
