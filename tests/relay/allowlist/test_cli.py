"""`crcr allowlist check FILE`: exit 0 with a summary, or exit 1 with every problem."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from crcr.relay.allowlist import cli as allowlist_cli

FIXTURES = Path(__file__).parents[2] / "fixtures" / "allowlists"


def crcr(*args: str) -> Result:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """crcr (test harness)."""

    allowlist_cli.register(app)
    return CliRunner().invoke(app, list(args))


def test_a_valid_file_exits_0_with_a_summary_of_its_levels() -> None:
    path = FIXTURES / "valid.yaml"

    result = crcr("allowlist", "check", str(path))

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"{path}: valid allowlist, 10 repositories",
        "  L1: 2 repositories",
        "  L2: 3 repositories",
        "  L3: 3 repositories (devices: xpu 1, npu 2)",
        "  L4: 2 repositories (devices if demoted: pytorch/crcr-test → crcr-test (its name),"
        " rocm/pytorch-rocm-ci → pytorch-rocm-ci (its name))",
    ]


def test_an_invalid_file_exits_1_listing_every_problem() -> None:
    path = FIXTURES / "bad-duplicate-repo.yaml"

    result = crcr("allowlist", "check", str(path))

    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}: invalid allowlist, 2 problems",
        "  L3.xpu.Org1/Repo1: 'Org1/Repo1' is listed twice: also at L1[0]",
        "  L4[1]: 'org4/critical' is listed twice: also at L4[0]",
    ]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("bad-*.yaml")), ids=lambda p: p.name)
def test_every_bad_fixture_fails_the_check(path: Path) -> None:
    result = crcr("allowlist", "check", str(path))

    assert result.exit_code == 1
    assert "invalid allowlist" in result.stdout


def test_an_empty_file_is_a_valid_empty_allowlist(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yml"
    path.write_text("# no backends yet\n")

    result = crcr("allowlist", "check", str(path))

    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == (
        f"{path}: valid allowlist, 0 repositories (empty: nothing is dispatched)"
    )


def test_the_references_buildkite_section_is_reported_as_unused(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yml"
    path.write_text("L2:\n  - vllm-project/vllm\nbuildkite_repos:\n  vllm/ci: vllm-project/vllm\n")

    result = crcr("allowlist", "check", str(path))

    assert result.exit_code == 0
    assert "  L2: 1 repository" in result.stdout.splitlines()
    assert result.stdout.splitlines()[-1] == (
        "  buildkite_repos: 1 pipeline(s), not used: crcr maps Buildkite pipelines in"
        " CRCR_OIDC_ISSUERS"
    )


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = crcr("allowlist", "check", str(tmp_path / "missing.yml"))

    assert result.exit_code == 2
    # rich boxes the message and wraps it at the terminal's width, wherever the path ends
    words = " ".join(re.sub("[│╭╮╰╯─]", " ", result.output).split())
    assert "does not exist" in words


# --- crcr allowlist reload (SPEC §12) -------------------------------------------------


def test_reload_moves_the_stamp_and_prints_the_allowlist_in_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from crcr.stores.sqlite.state import SqliteStateStore

    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n  - org/kept\n")
    monkeypatch.setenv("CRCR_ALLOWLIST", str(allowlist))
    monkeypatch.setenv("CRCR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CRCR_REDIS_URL", raising=False)

    first, second = crcr("allowlist", "reload"), crcr("allowlist", "reload")

    assert first.exit_code == 0, first.output
    assert first.stdout.splitlines()[:2] == [
        "allowlist stamp moved to 1: every instance re-reads it",
        f"{allowlist}: valid allowlist, 1 repository",
    ]
    assert second.stdout.startswith("allowlist stamp moved to 2")

    async def stamp() -> int:
        store = await SqliteStateStore.open(tmp_path / "data" / "state.db")
        try:
            return await store.allowlist_stamp()
        finally:
            await store.close()

    assert asyncio.run(stamp()) == 2


def test_reload_without_a_readable_allowlist_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRCR_ALLOWLIST", str(tmp_path / "missing.yml"))
    monkeypatch.setenv("CRCR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CRCR_REDIS_URL", raising=False)

    result = crcr("allowlist", "reload")

    assert result.exit_code == 1
    assert "missing.yml" in result.output
