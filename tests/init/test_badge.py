"""`crcr init downstream` prints the README badge's Markdown (SPEC §13 badges)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from tests.init.test_cli import CALLBACK_URL, app, init

from crcr.init.badge import badge_markdown, relay_base

__all__ = ["app"]  # a fixture used by name


def test_the_badge_markdown_names_this_repository_on_the_relay(
    app: typer.Typer, tmp_path: Path
) -> None:
    result = init(app, tmp_path, "--callback-url", CALLBACK_URL, "--repo", "my-org/xpu")
    assert result.exit_code == 0, result.output
    assert (
        "  [![crcr](https://relay.example.com/badge/my-org/xpu.svg)]"
        "(https://relay.example.com/crcr/my-org/xpu)\n"
    ) in result.output
    assert "replace OWNER/REPO" not in result.output


def test_without_repo_the_markdown_has_a_placeholder_the_command_names(
    app: typer.Typer, tmp_path: Path
) -> None:
    result = init(app, tmp_path, "--callback-url", CALLBACK_URL)
    assert "/badge/OWNER/REPO.svg" in result.output
    assert "replace OWNER/REPO, or run again with --force --repo OWNER/REPO" in result.output


@pytest.mark.parametrize("repo", ["no-slash", "a/b/c", "a/b c", "a/b)![x](https://evil"])
def test_a_bad_repo_is_refused_naming_the_option_and_writes_nothing(
    app: typer.Typer, tmp_path: Path, repo: str
) -> None:
    result = init(app, tmp_path, "--repo", repo)
    assert result.exit_code == 2
    assert f"--repo must be OWNER/REPO, got {repo!r}" in result.output
    assert not (tmp_path / ".github").exists()


def test_a_relay_under_a_prefix_keeps_it() -> None:
    assert relay_base("https://ci.example.org/relay/github/callback/") == (
        "https://ci.example.org/relay"
    )
    assert badge_markdown("https://ci.example.org/relay/github/callback", "o/r") == (
        "[![crcr](https://ci.example.org/relay/badge/o/r.svg)](https://ci.example.org/relay/crcr/o/r)"
    )
