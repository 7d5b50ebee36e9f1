"""Baseline verdicts from the whole loop: sandbox GitHub → relay → simulated CI → HUD.

Scenario (SPEC §11), on real SQLite and real PostgreSQL results stores:
1. A push to upstream main is dispatched; acme/xpu-backend's job X fails, Y and Z pass;
   acme/npu-backend runs only `build`.
2. A PR is opened; X and Y fail, Z fails once; npu-backend's new `test` job fails.
   → X `already_failing`, Y `new`, Z `new`, npu's `test` `unknown` (no push result).
3. The downstream re-runs its failed jobs; Z passes on its second attempt → Z `flaky`.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine
from starlette.routing import Mount

from crcr.app import create_app
from crcr.demo.servers import EmbeddedServer, bind_socket, socket_url
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.simulated_ci import SimulatedCI
from crcr.sandbox.simulated_ci_model import Duration, JobSpec, OutcomeRates, WorkflowSpec
from crcr.sandbox.webhooks import WebhookDelivery, pull_request_event, push_event, send
from crcr.settings import load_settings

UPSTREAM = "baseline-org/pytorch"
XPU, NPU = "acme/xpu-backend", "acme/npu-backend"
PR_NUMBER, HEAD_SHA, MAIN_SHA = 777, "7e57" * 10, "3a1e" * 10
QUICK = Duration.fixed(0.0)
FAILS, FLAKY = OutcomeRates(failure=1.0), OutcomeRates(flaky=1.0)

ON_MAIN = {
    XPU: WorkflowSpec(
        "xpu-ci",
        jobs=(JobSpec("X", QUICK, outcomes=FAILS), JobSpec("Y", QUICK), JobSpec("Z", QUICK)),
    ),
    NPU: WorkflowSpec("npu-ci", jobs=(JobSpec("build", QUICK),)),
}
ON_THE_PR = {
    XPU: WorkflowSpec(
        "xpu-ci",
        jobs=(
            JobSpec("X", QUICK, outcomes=FAILS),
            JobSpec("Y", QUICK, outcomes=FAILS),
            JobSpec("Z", QUICK, outcomes=FLAKY),
        ),
    ),
    NPU: WorkflowSpec("npu-ci", jobs=(JobSpec("test", QUICK, outcomes=FAILS),)),
}


@dataclass
class Loop:
    """The running loop and handles on the sandbox side."""

    relay_url: str
    sandbox_url: str
    secret: str
    github: SandboxGitHub
    ci: SimulatedCI
    http: httpx.AsyncClient

    async def webhook(self, event: str, payload: dict[str, Any]) -> None:
        delivery = WebhookDelivery.build(event, payload, self.secret)
        response = await send(self.http, f"{self.relay_url}/github/webhook", delivery)
        assert response.status_code == 200, response.text

    async def hud(self, path: str) -> Any:
        response = await self.http.get(f"{self.relay_url}/api/crcr{path}")
        response.raise_for_status()
        return response.json()

    async def jobs(self, event: str = "pull_request") -> list[dict[str, Any]]:
        """Every job row of the PR (or of the push) the HUD shows, from its JSON API."""
        if event == "pull_request":
            view = await self.hud(f"/pr/{PR_NUMBER}")
            return [job for backend in view["backends"] for job in backend["jobs"]]
        cells = []
        for repo in ON_MAIN:
            page = await self.http.get(f"{self.relay_url}/api/crcr/backends/{repo}?event_type=push")
            if page.status_code == 404:  # no result from this backend yet
                continue
            page.raise_for_status()
            cells += [cell for row in page.json()["rows"] for cell in row["cells"].values()]
        return cells

    async def rerun_failed_jobs(self, repo: str) -> None:
        """What a downstream maintainer does: re-run the failed jobs of the PR's run."""
        [run] = [run for run in self.ci.runs(repo) if run.pr_number == PR_NUMBER]
        token, _ = self.github.issue_token(self.github.installation_of_repo(repo).id)
        response = await self.http.post(
            f"{self.sandbox_url}/repos/{repo}/actions/runs/{run.run_id}/rerun-failed-jobs",
            headers={"Authorization": f"token {token}"},
        )
        assert response.status_code == 201, response.text


async def wait_for(condition: Callable[[], Awaitable[bool]], within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not await condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


@pytest.fixture
async def loop(tmp_path: Path, engine: Engine, store_url: str) -> AsyncIterator[Loop]:
    """Sandbox, relay + HUD on the store under test (emptied first), simulated CI."""
    sandbox_socket, relay_socket = bind_socket("127.0.0.1", 0), bind_socket("127.0.0.1", 0)
    sandbox_url = socket_url(sandbox_socket)
    github = SandboxGitHub()
    github.install_app(UPSTREAM, *ON_MAIN)
    issuer = SandboxIssuer(f"{sandbox_url}/oidc")
    (tmp_path / "allowlist.yaml").write_text(f"L2:\n  - {XPU}\n  - {NPU}\n")
    secret = secrets.token_urlsafe(16)
    settings = load_settings(
        upstream_repo=UPSTREAM,
        webhook_secret=secret,
        github_app_id=str(github.app.app_id),
        github_app_private_key=github.app.private_key_pem,
        github_api_url=sandbox_url,
        allowlist=str(tmp_path / "allowlist.yaml"),
        oidc_issuers=[{"issuer": issuer.issuer, "kind": "github"}],
        redis_url=None,
        data_dir=tmp_path,
        database_url=store_url,
        hud_url=None,
        hud_token=secrets.token_urlsafe(16),
    )
    sandbox = EmbeddedServer(
        create_sandbox_app(github, extra_routes=[Mount("/oidc", routes=issuer.routes())]),
        sandbox_socket,
        lifespan="off",
    )
    relay = EmbeddedServer(create_app(settings), relay_socket)
    await sandbox.start()
    await relay.start()
    ci = SimulatedCI(
        github,
        issuer,
        callback_url=f"{relay.url}/github/callback",
        workflows=ON_MAIN,
        seed=11,
        work_dir=tmp_path / "runners",
        poll_interval=0.05,
    )
    await ci.start()
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            yield Loop(relay.url, sandbox_url, secret, github, ci, http)
    finally:
        await ci.stop()
        await relay.stop()
        await sandbox.stop()


def verdicts(jobs: list[dict[str, Any]]) -> dict[tuple[str, str, int], str | None]:
    return {(j["downstream_repo"], j["job_name"], j["run_attempt"]): j["baseline"] for j in jobs}


async def test_each_failed_pr_job_is_judged_against_main_through_the_whole_loop(
    loop: Loop,
) -> None:
    await loop.webhook("push", push_event(repo=UPSTREAM, after=MAIN_SHA))

    async def main_reported() -> bool:
        cells = await loop.jobs("push")
        return len(cells) == 4 and all(cell["status"] == "completed" for cell in cells)

    await wait_for(main_reported)

    loop.ci.workflows.update({repo.lower(): spec for repo, spec in ON_THE_PR.items()})
    pr = pull_request_event("opened", repo=UPSTREAM, number=PR_NUMBER, head_sha=HEAD_SHA)
    await loop.webhook("pull_request", pr)

    async def pr_reported(rows: int) -> bool:
        jobs = await loop.jobs()
        return len(jobs) == rows and all(job["status"] == "completed" for job in jobs)

    await wait_for(lambda: pr_reported(4))
    assert verdicts(await loop.jobs()) == {
        (XPU, "X", 1): "already_failing",
        (XPU, "Y", 1): "new",
        (XPU, "Z", 1): "new",
        (NPU, "test", 1): "unknown",
    }

    await loop.rerun_failed_jobs(XPU)
    await wait_for(lambda: pr_reported(7))

    assert verdicts(await loop.jobs()) == {
        (XPU, "X", 1): "already_failing",
        (XPU, "X", 2): "already_failing",
        (XPU, "Y", 1): "new",
        (XPU, "Y", 2): "new",
        (XPU, "Z", 1): "flaky",
        (XPU, "Z", 2): None,  # it passed: only failures get a verdict
        (NPU, "test", 1): "unknown",
    }
