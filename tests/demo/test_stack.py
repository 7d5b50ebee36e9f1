"""The demo's stack: results reach the dashboard, and a restart keeps the history."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from tests.waiting import eventually

from crcr.demo.options import DemoOptions
from crcr.demo.stack import ALLOWLIST_FILE, STATE_FILE, DemoStack


def options(data_dir: Path, seed: int) -> DemoOptions:
    return DemoOptions(port=0, data_dir=data_dir, speed=100.0, rate=60.0, seed=seed, history_days=1)


@pytest.mark.slow  # a whole demo: relay, HUD, sandbox and simulated CI
async def test_results_reach_the_dashboard_and_survive_a_restart(tmp_path: Path) -> None:
    first = DemoStack(options(tmp_path, seed=1))
    await first.start()
    try:
        await eventually(lambda: first.first_result_after is not None)
        async with httpx.AsyncClient() as client:
            summary = (
                await client.get(
                    first.dashboard_url.replace("/crcr", "/api/crcr/summary"), params={"days": 1}
                )
            ).json()
        kept = (await first.progress()).hud.completed
        snapshot = first.simulated_ci.snapshot() if first.simulated_ci else None
    finally:
        await first.stop()
    assert summary["stats"]["runs"] >= 1
    assert snapshot is not None and snapshot.report_errors == 0
    assert (tmp_path / "hud.db").exists() and (tmp_path / ALLOWLIST_FILE).exists()
    next_pr = json.loads((tmp_path / STATE_FILE).read_text())["next_pr"]
    assert next_pr > 150_001

    second = DemoStack(options(tmp_path, seed=2))
    await second.start()
    try:
        shown = (await second.progress()).hud.completed
        await eventually(lambda: bool(second.github.dispatches()))
        first_dispatch = second.github.dispatches()[0].client_payload["payload"]
    finally:
        await second.stop()
    assert shown >= kept > 0, "the dashboard still shows the earlier run's results"
    assert first_dispatch["pull_request"]["number"] == next_pr, "PR numbers carry on"
