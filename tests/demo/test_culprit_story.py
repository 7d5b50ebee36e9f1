"""The demo's "who broke main" story: a merged PR breaks one backend; the dashboard names it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from crcr.demo.backends import DEMO_UPSTREAM
from crcr.demo.culprit_story import BREAKING_BACKEND, CULPRIT_AT, FIRST_PR, TITLES
from crcr.demo.options import DemoOptions
from crcr.demo.stack import DemoStack
from crcr.runtime import Runtime


async def bisections(stack: DemoStack) -> list[dict[str, Any]]:
    url = stack.dashboard_url.replace("/crcr", "/api/crcr/culprits")
    async with httpx.AsyncClient() as client:
        found: list[dict[str, Any]] = (
            await client.get(url, params={"repo": BREAKING_BACKEND})
        ).json()["culprits"]
    return found


@pytest.mark.slow  # a whole demo: relay, HUD, sandbox and simulated CI
async def test_the_demo_bisects_the_break_and_its_backend_page_names_the_culprit(
    tmp_path: Path,
) -> None:
    options = DemoOptions(
        port=0, data_dir=tmp_path, speed=400.0, rate=6.0, seed=5, history_days=0,
        degrade_after=0.0,
    )  # fmt: skip
    stack = DemoStack(options)
    await stack.start()
    try:
        assert stack._relay_app is not None
        runtime: Runtime = stack._relay_app.state.runtime
        assert runtime.culprits is not None
        deadline = time.monotonic() + 150
        found: list[dict[str, Any]] = []
        while not found or found[0]["verdict"] == "running":
            assert time.monotonic() < deadline, ("no verdict in time", found)
            await runtime.culprits.run_pass()  # as the leader's sweeper pass does, sooner
            await asyncio.sleep(0.5)
            found = await bisections(stack)
        async with httpx.AsyncClient() as client:
            page = (await client.get(f"{stack.dashboard_url}/{BREAKING_BACKEND}")).text
    finally:
        await stack.stop()
    [verdict] = found
    upstream = stack.github.repo(DEMO_UPSTREAM)
    culprit = next(
        sha
        for sha, commit in upstream.commits.items()
        if commit["message"] == f"{TITLES[CULPRIT_AT]} (#{FIRST_PR + CULPRIT_AT})"
    )
    assert (verdict["verdict"], verdict["culprit"]) == ("confirmed", culprit), verdict
    assert verdict["dispatches"] <= 4
    assert 'data-section="culprits"' in page and f'data-culprit="{culprit}"' in page
    assert {d.repo for d in stack.github.dispatches() if d.event_type == "crcr_bisect"} == {
        BREAKING_BACKEND
    }
