"""The demo's stack: results reach the dashboard, and a restart keeps the history."""

from __future__ import annotations

import json
import re
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


@pytest.mark.slow  # a whole demo: relay, HUD, sandbox and simulated CI
async def test_the_dashboard_links_a_pr_to_the_sandbox_page_of_it(tmp_path: Path) -> None:
    stack = DemoStack(options(tmp_path, seed=3))
    await stack.start()
    try:
        await eventually(lambda: stack.first_result_after is not None)
        number = stack.github.pulls("crcr-demo/pytorch")[0]["number"]
        async with httpx.AsyncClient() as client:
            await eventually(lambda: bool(stack.github.check_runs("crcr-demo/pytorch")))
            pr_page = (await client.get(f"{stack.dashboard_url}/pr/{number}")).text
            [link] = re.findall(r'href="([^"]+/pull/\d+)">Open on GitHub', pr_page)
            sandbox_page = await client.get(link)
    finally:
        await stack.stop()

    assert not link.startswith("https://github.com"), link
    assert link.endswith(f"/web/crcr-demo/pytorch/pull/{number}")
    assert sandbox_page.status_code == 200
    assert "Check runs" in sandbox_page.text and "crcr/" in sandbox_page.text
