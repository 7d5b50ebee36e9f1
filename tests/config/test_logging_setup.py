"""One logging configuration for every command: level and format from CRCR_LOG_*."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

import pytest

from crcr.config.logging_setup import (
    ACCESS_LOGGER,
    TERMINAL_HANDLER,
    configure_logging,
    default_format,
    log_config,
)


def emitted(stream: io.StringIO, logger: str, level: int, message: str, **extra: object) -> str:
    handler = next(h for h in logging.getLogger().handlers if h.name == TERMINAL_HANDLER)
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    logging.getLogger(logger).log(level, message, extra=extra)
    return stream.getvalue()


def test_the_default_format_is_text_on_a_terminal_and_json_elsewhere() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert default_format(Tty()) == "text"
    assert default_format(io.StringIO()) == "json"


def test_json_lines_carry_the_context_and_no_ansi_colour_copy() -> None:
    configure_logging("info", "json")
    out = emitted(io.StringIO(), "uvicorn.error", logging.INFO, "Started", color_message="\x1b[1m")

    entry = json.loads(out)
    assert entry["message"] == "Started"
    assert "color_message" not in entry
    assert "\x1b" not in out


def test_text_lines_show_the_context_as_key_values() -> None:
    configure_logging("info", "text")
    out = emitted(io.StringIO(), "crcr.relay", logging.WARNING, "refused", repo="org/a")

    assert "WARNING" in out and "crcr.relay: refused" in out and "repo=org/a" in out
    assert not out.lstrip().startswith("{")


def test_the_level_applies_to_crcr_and_uvicorn_but_libraries_stay_at_warning() -> None:
    configure_logging("debug", "json")
    assert logging.getLogger("crcr.anything").isEnabledFor(logging.DEBUG)
    assert logging.getLogger("uvicorn.error").isEnabledFor(logging.DEBUG)
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)

    configure_logging("warning", "json")
    assert not logging.getLogger("crcr.anything").isEnabledFor(logging.INFO)


def test_uvicorns_access_log_is_replaced_by_crcrs() -> None:
    config = log_config("info", "json")
    assert config["loggers"]["uvicorn.access"]["handlers"] == []
    assert config["loggers"][ACCESS_LOGGER]["level"] == "INFO"
    assert log_config("info", "json", access_log=False)["loggers"][ACCESS_LOGGER]["level"] == (
        "WARNING"
    )


@pytest.mark.parametrize(("level", "fmt"), [("loud", "json"), ("info", "xml")])
def test_an_unknown_level_or_format_is_refused(level: str, fmt: str) -> None:
    with pytest.raises(ValueError, match="must be one of"):
        log_config(level, fmt)


def test_the_root_command_configures_logging_before_any_subcommand_runs() -> None:
    # `crcr sweep`, `crcr hud serve`, the demo configured no logging before. A probe
    # command added beside them logs at DEBUG: it comes out as JSON, with its fields.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRCR_") and k != "CI"}
    env.update(CRCR_LOG_LEVEL="debug", CRCR_LOG_FORMAT="json")
    code = (
        "import logging, sys; import crcr.cli as c; c._register_component_commands();"
        "c.app.registered_commands.append(c.typer.models.CommandInfo(name='probe',"
        " callback=lambda: logging.getLogger('crcr.probe').debug('probe', extra={'k': 1})));"
        "sys.argv=['crcr', 'probe']; c.app(prog_name='crcr')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert {"message": "probe", "k": 1}.items() <= lines[0].items(), result.stderr
