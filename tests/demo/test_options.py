"""`crcr demo` options: defaults that work on a fresh clone, one-line errors for mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from crcr.demo.options import DemoOptions, OptionError, parse_options

DEFAULTS = {
    "duration": None,
    "rate": "12",
    "speed": "30",
    "port": "8000",
    "data_dir": "./crcr-data",
    "open_browser": None,
}


def parse(interactive: bool = False, **changes: object) -> DemoOptions:
    return parse_options(**{**DEFAULTS, **changes}, interactive=interactive)  # type: ignore[arg-type]


def test_the_defaults_run_until_stopped_on_port_8000_in_crcr_data() -> None:
    options = parse()
    assert options == DemoOptions(
        duration=None, rate=12.0, speed=30.0, port=8000, data_dir=Path("crcr-data")
    )
    assert options.history_days == 14


def test_the_browser_opens_by_default_only_in_a_terminal() -> None:
    assert parse(interactive=True).open_browser is True
    assert parse(interactive=False).open_browser is False
    assert parse(interactive=True, open_browser=False).open_browser is False
    assert parse(interactive=False, open_browser=True).open_browser is True


def test_numbers_are_read_as_given() -> None:
    options = parse(duration="20", rate="120", speed="50", port="0", history="3")
    assert (options.duration, options.rate, options.speed, options.port) == (20.0, 120.0, 50.0, 0)
    assert options.history_days == 3 and parse(history="0").history_days == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"duration": "0"}, "--duration must be a number of seconds greater than 0, got '0'"),
        ({"duration": "soon"}, "--duration must be a number of seconds, got 'soon'"),
        ({"rate": "-3"}, "--rate must be a number of events per minute greater than 0"),
        ({"rate": "100000"}, "--rate must be at most 6000"),
        ({"speed": "inf"}, "--speed must be a time-compression factor greater than 0"),
        ({"speed": "fast"}, "--speed must be a time-compression factor, got 'fast'"),
        ({"port": "70000"}, "--port must be a TCP port between 0 and 65535, got '70000'"),
        ({"port": "-1"}, "--port must be a TCP port"),
        ({"data_dir": ""}, "--data-dir must name a directory"),
        ({"history": "-1"}, "--history must be a number of days from 0 to 90, got '-1'"),
        ({"history": "365"}, "--history must be a number of days from 0 to 90"),
    ],
)
def test_each_mistake_is_one_line_naming_the_option(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(OptionError) as caught:
        parse(**changes)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_file_is_not_a_data_directory(tmp_path: Path) -> None:
    file = tmp_path / "results"
    file.write_text("")
    with pytest.raises(OptionError, match="--data-dir must be a directory"):
        parse(data_dir=str(file))
