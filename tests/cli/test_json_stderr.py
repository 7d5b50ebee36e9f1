"""JSON log mode: every line on stderr is JSON, a command's own errors included; NO_COLOR."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from crcr.config.logging_setup import JsonStderr, requested_format

BASE_ENV = {
    name: value
    for name, value in os.environ.items()
    if not name.startswith("CRCR_") and name not in ("CI", "NO_COLOR", "FORCE_COLOR", "COLUMNS")
}
BOOM = (
    "import sys, crcr.cli as c; sys.argv[0] = 'crcr'\n"
    "def register(): c.app.command('boom')(lambda: 1 / 0)\n"
    "c._register_component_commands = register; c.main()"
)


def run(*args: str, code: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "crcr"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env={**BASE_ENV, **env},
        timeout=60,
        check=False,
    )


def json_lines(stderr: str) -> list[dict[str, object]]:
    lines = stderr.splitlines()
    assert lines, "nothing on stderr"
    return [json.loads(line) for line in lines]  # fails on the first line that is not JSON


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("serve",), "missing required settings: CRCR_WEBHOOK_SECRET"),
        (("no-such-command",), "No such command 'no-such-command'"),
        (("audit", "--since", "yesterday"), "Invalid value for --since"),
    ],
)
def test_a_command_error_is_a_json_line(args: tuple[str, ...], words: str) -> None:
    done = run(*args, CRCR_LOG_FORMAT="json")

    assert done.returncode != 0
    lines = json_lines(done.stderr)
    assert any(words in str(line["message"]) for line in lines), lines
    assert {line["logger"] for line in lines} == {"crcr.cli"}


def test_the_option_asks_for_it_as_the_variable_does() -> None:
    done = run("--log-format", "json", "serve")
    assert "missing required settings" in json_lines(done.stderr)[0]["message"]  # type: ignore[operator]


def test_an_unexpected_exception_is_one_json_line_carrying_the_traceback() -> None:
    done = run("boom", code=BOOM, CRCR_LOG_FORMAT="json")

    assert done.returncode == 1
    [line] = json_lines(done.stderr)
    assert line["level"] == "critical"
    assert "ZeroDivisionError" in str(line["exception"])


def test_text_mode_keeps_the_one_line_of_text() -> None:
    done = run("serve", CRCR_LOG_FORMAT="text")
    assert done.stderr.startswith("crcr serve: missing required settings")


def test_no_color_means_no_escape_codes_even_on_a_forced_terminal() -> None:
    coloured = run("serve", "--help", FORCE_COLOR="1", COLUMNS="200")
    plain = run("serve", "--help", FORCE_COLOR="1", COLUMNS="200", NO_COLOR="1")

    assert "\x1b[" in coloured.stdout  # the check can see escape codes
    assert "\x1b[" not in plain.stdout
    assert "CRCR_WEBHOOK_SECRET" in plain.stdout


def test_lines_become_json_frames_vanish_json_passes_through() -> None:
    raw = io.StringIO()
    stderr = JsonStderr(raw)
    stderr.write('{"time":"t","level":"info"}\n')
    stderr.write("╭─ Error ─╮\n│ \x1b[1mbad thing\x1b[0m │\n╰─────────╯\nwarning: careful\nhalf")
    stderr.close_line()

    lines = raw.getvalue().splitlines()
    assert lines[0] == '{"time":"t","level":"info"}'
    parsed = [json.loads(line) for line in lines[1:]]
    assert [(p["level"], p["message"]) for p in parsed] == [
        ("error", "Error"),
        ("error", "bad thing"),
        ("warning", "warning: careful"),
        ("error", "half"),
    ]
    assert not stderr.isatty()


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["--log-format", "JSON", "serve"], {}, "json"),
        (["--log-format=text", "serve"], {"CRCR_LOG_FORMAT": "json"}, "text"),
        (["serve", "--log-format", "json"], {}, None),  # a subcommand's option, not ours
        (["serve"], {"CRCR_LOG_FORMAT": "json"}, "json"),
        (["serve"], {}, None),
    ],
)
def test_the_format_asked_for_is_read_before_parsing(
    argv: list[str], env: dict[str, str], expected: str | None
) -> None:
    assert requested_format(argv, env) == expected
