"""`crcr sandbox --canary OWNER/REPO`: a bad value is one line naming the option, exit 2."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from crcr.sandbox import cli as sandbox_cli


def crcr() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """A root, so that `sandbox` stays a subcommand."""

    sandbox_cli.register(app)
    return app


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--canary", "no-slash"], "--canary must be OWNER/REPO, got 'no-slash'"),
        (
            ["--canary", "o/r", "--callback-url", "ftp://x"],
            "--callback-url must be an http(s) URL, got 'ftp://x'",
        ),
    ],
)
def test_a_bad_canary_option_is_named(arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(crcr(), ["sandbox", "--port", "0", *arguments])
    assert result.exit_code == 2
    assert f"crcr sandbox: {message}" in result.output
