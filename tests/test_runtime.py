"""The runtime's wiring: the in-process HUD judges the allowlist's backends at their levels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.hud.hud_bodies import completed, our_body
from tests.relay.callback_harness import SANDBOX_API, sandbox_github_client

from crcr.config.settings import load_settings
from crcr.runtime import open_runtime
from crcr.sandbox.github_state import SandboxGitHub
from crcr.stores.sqlite.state import SqliteStateStore

ALLOWLIST = """
L1:
  - acme/dispatch-only
L2:
  - acme/newcomer
L4:
  - acme/critical: oncall1
"""


async def level_status_with(allowlist: Path, tmp_path: Path) -> dict[str, Any]:
    sandbox = SandboxGitHub()
    settings = load_settings(
        github_app_id=str(sandbox.app.app_id),
        github_app_private_key=sandbox.app.private_key_pem,
        github_api_url=SANDBOX_API,
        allowlist=str(allowlist),
        data_dir=tmp_path / "data",
    )
    store = await SqliteStateStore.open(tmp_path / "state.db")
    github = sandbox_github_client(sandbox, store)
    runtime = await open_runtime(settings, store=store, github=github)
    try:
        assert runtime.hud is not None
        await runtime.hud.ingestor.ingest(completed(our_body(repo="acme/reported"), "success"))
        status = await runtime.hud.level_status()
    finally:
        await runtime.close()
        await github.aclose()
        await store.close()
    return status


async def test_the_hud_lists_every_allowlisted_backend_at_its_allowlisted_level(
    tmp_path: Path,
) -> None:
    allowlist = tmp_path / "allowlist.yaml"
    allowlist.write_text(ALLOWLIST)

    status = await level_status_with(allowlist, tmp_path)

    assert [(r["repo"], r["level"], r["noData"], r["change"]) for r in status["repos"]] == [
        ("acme/critical", "L4", True, None),
        ("acme/dispatch-only", "L1", True, None),
        ("acme/newcomer", "L2", True, None),
    ]


async def test_without_a_readable_allowlist_the_status_takes_the_levels_reported(
    tmp_path: Path,
) -> None:
    status = await level_status_with(tmp_path / "missing.yaml", tmp_path)

    [reported] = status["repos"]
    assert (reported["repo"], reported["level"]) == ("acme/reported", "L3")
