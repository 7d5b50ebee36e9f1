"""`crcr demo` on the command line: one-line errors, and Ctrl-C stops it cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from crcr.demo import cli as demo_cli

CRCR = [sys.executable, "-m", "crcr"]


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """A root, so that `demo` stays a subcommand."""

    demo_cli.register(app)
    return app


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--rate", "lots"], "crcr demo: --rate must be a number of events per minute, got 'lots'"),
        (["--speed", "0"], "crcr demo: --speed must be a time-compression factor greater than 0"),
        (["--port", "http"], "crcr demo: --port must be a TCP port between 0 and 65535"),
        (["--duration", "-5"], "crcr demo: --duration must be a number of seconds greater than 0"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_status_2(
    app: typer.Typer, arguments: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, ["demo", *arguments, "--no-open"])
    assert result.exit_code == 2
    assert result.output.startswith(message)
    assert result.output.count("\n") == 1


def test_a_busy_port_is_one_line_suggesting_another(app: typer.Typer, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        result = CliRunner().invoke(
            app, ["demo", "--port", port, "--no-open", "--data-dir", str(tmp_path)]
        )
    assert result.exit_code == 2
    assert result.output == (
        f"crcr demo: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "pass another --port (0 picks a free one)\n"
    )


@pytest.mark.slow  # a whole demo: relay, HUD, sandbox and simulated CI
def test_ctrl_c_stops_the_demo_cleanly_and_keeps_the_data(tmp_path: Path) -> None:
    demo = subprocess.Popen(
        [*CRCR, "demo", "--port", "0", "--no-open", "--data-dir", str(tmp_path), "--speed", "100"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert demo.stdout is not None
        first = demo.stdout.readline()
        assert first.startswith("crcr demo: dashboard at http://127.0.0.1:")
        assert demo.stdout.readline().startswith("[0:0"), "a plain progress line, not a live view"
        demo.send_signal(signal.SIGINT)
        output, _ = demo.communicate(timeout=30)
    finally:
        if demo.poll() is None:
            demo.kill()
    assert demo.returncode == 0, output
    assert "crcr demo: stopping…" in output
    assert "Traceback" not in output
    assert f"Data kept in {tmp_path}" in output
    assert (tmp_path / "hud.db").exists() and (tmp_path / "demo-state.json").exists()
