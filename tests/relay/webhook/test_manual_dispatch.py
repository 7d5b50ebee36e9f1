"""`crcr dispatch` (SPEC §12): one dispatch to one allowlisted downstream, as a webhook's.

Run as an operator runs it — the command in its own process, settings from `CRCR_*`
variables, beside a serving relay that shares its state store — over the sandbox: the
simulated downstream's callbacks bind to the dispatch record the command wrote and
their results reach the HUD.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.sandbox_loop import Loop, running_loop
from tests.waiting import eventually

from crcr.sandbox.simulated_ci_model import Duration, JobSpec, WorkflowSpec

UPSTREAM = "dispatch-org/pytorch"
BACKEND = "dispatch-org/new-backend"
NIGHTLY_ONLY = "dispatch-org/nightly-only"
SMOKE = "dispatch-org/smoke"
PR_NUMBER = 77
HEAD_SHA = "77ab" * 10
MAIN_SHA = "cafe" * 10

ALLOWLIST = f"""
L1:
  - {SMOKE}
L2:
  - {BACKEND}
  - {NIGHTLY_ONLY}: {{oncalls: [carol], events: [nightly]}}
"""
QUICK = Duration.fixed(0.0)
WORKFLOWS = {
    BACKEND: WorkflowSpec("backend-ci", jobs=(JobSpec("build", QUICK), JobSpec("test", QUICK))),
    NIGHTLY_ONLY: WorkflowSpec("nightly", jobs=(JobSpec("test", QUICK),)),
    SMOKE: WorkflowSpec("smoke", jobs=(JobSpec("smoke", QUICK),)),
}


@dataclass
class Operator:
    """Runs `crcr dispatch` with the relay's settings, as its operator would."""

    loop: Loop
    env: dict[str, str]

    async def dispatch(self, *args: str) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "crcr",
            "dispatch",
            *args,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()


@pytest.fixture
async def operator(tmp_path: Path) -> AsyncIterator[Operator]:
    async with running_loop(
        tmp_path, upstream=UPSTREAM, allowlist=ALLOWLIST, workflows=WORKFLOWS
    ) as loop:
        loop.github.add_file(UPSTREAM, "README.md", "upstream")
        loop.github.add_pull(UPSTREAM, PR_NUMBER, head_sha=HEAD_SHA, labels=("ciflow/trunk",))
        loop.github.add_commit(UPSTREAM, MAIN_SHA)
        env = {name: value for name, value in os.environ.items() if not name.startswith("CRCR_")}
        env.update(
            CRCR_UPSTREAM_REPO=UPSTREAM,
            CRCR_GITHUB_APP_ID=str(loop.github.app.app_id),
            CRCR_GITHUB_APP_PRIVATE_KEY=loop.github.app.private_key_pem,
            CRCR_GITHUB_API_URL=loop.sandbox_url,
            CRCR_ALLOWLIST=str(tmp_path / "allowlist.yaml"),
            CRCR_DATA_DIR=str(tmp_path),
            CRCR_LOG_LEVEL="warning",
        )
        yield Operator(loop, env)


def delivery_id_of(stdout: str) -> str:
    first = stdout.splitlines()[0]
    assert first.startswith("delivery id: "), stdout
    return first.removeprefix("delivery id: ")


async def backend_rows(loop: Loop) -> list[dict[str, Any]]:
    view = await loop.hud(f"/pr/{PR_NUMBER}")
    return [job for backend in view["backends"] for job in backend["jobs"]]


async def test_a_dispatch_for_a_pr_reaches_the_hud_through_the_downstreams_callbacks(
    operator: Operator,
) -> None:
    loop = operator.loop
    code, out, err = await operator.dispatch("--repo", BACKEND, "--pr", str(PR_NUMBER))

    assert code == 0, err
    delivery_id = delivery_id_of(out)
    assert delivery_id.startswith("manual-")
    assert f"{BACKEND} (L2): dispatched" in out
    [sent] = loop.github.dispatches(BACKEND)
    assert sent.event_type == "pull_request"
    assert sent.client_payload["delivery_id"] == delivery_id
    pr = sent.client_payload["payload"]["pull_request"]
    assert (pr["number"], pr["head"]["sha"]) == (PR_NUMBER, HEAD_SHA)
    assert [label["name"] for label in pr["labels"]] == ["ciflow/trunk"]
    assert loop.github.dispatches(SMOKE) == [], "only the named downstream gets it"

    async def both_jobs_completed() -> bool:
        rows = await backend_rows(loop)
        return len(rows) == 2 and all(row["status"] == "completed" for row in rows)

    await eventually(both_jobs_completed, within=60)
    rows = await backend_rows(loop)
    assert {(row["job_name"], row["head_sha"], row["pr_number"]) for row in rows} == {
        ("build", HEAD_SHA, PR_NUMBER),
        ("test", HEAD_SHA, PR_NUMBER),
    }
    verdicts = {(record.repo, record.verdict) for record in loop.ci.reporter.records}
    assert verdicts == {(BACKEND, "accepted")}


async def test_a_dispatch_for_a_commit_is_a_push_to_the_default_branch(
    operator: Operator,
) -> None:
    loop = operator.loop
    code, out, err = await operator.dispatch("--repo", NIGHTLY_ONLY.upper(), "--sha", MAIN_SHA)

    assert code == 0, err
    delivery_id = delivery_id_of(out)
    [sent] = loop.github.dispatches(NIGHTLY_ONLY)
    assert sent.event_type == "push"
    payload = sent.client_payload["payload"]
    assert (payload["ref"], payload["after"]) == ("refs/heads/main", MAIN_SHA)
    assert sent.client_payload["delivery_id"] == delivery_id

    async def pushed_job_on_the_hud() -> bool:
        page = await loop.hud(f"/backends/{NIGHTLY_ONLY}")
        return json.dumps(page).count(MAIN_SHA) > 0

    await eventually(pushed_job_on_the_hud, within=60)


async def test_an_l1_backend_is_dispatched_to_with_a_note_that_the_hud_shows_nothing(
    operator: Operator,
) -> None:
    code, out, err = await operator.dispatch("--repo", SMOKE, "--sha", MAIN_SHA)

    assert code == 0, err
    assert f"{SMOKE} (L1): dispatched" in out
    assert "do not show on the HUD" in out
    assert len(operator.loop.github.dispatches(SMOKE)) == 1


REFUSALS = [
    (("--repo", "dispatch-org/stranger", "--pr", str(PR_NUMBER)), "is not on the allowlist"),
    (("--repo", BACKEND, "--pr", "999"), f"pull request #999 not found in {UPSTREAM}"),
    (("--repo", NIGHTLY_ONLY, "--pr", str(PR_NUMBER)), "gets no pull_request dispatches"),
    (("--repo", BACKEND, "--sha", "f" * 40), f"commit {'f' * 40} not found in {UPSTREAM}"),
    (("--repo", BACKEND, "--sha", "abc"), "--sha must be a full 40-character commit SHA"),
]


async def test_a_dispatch_that_cannot_be_sent_says_why_and_sends_nothing(
    operator: Operator,
) -> None:
    for args, message in REFUSALS:
        code, out, err = await operator.dispatch(*args)

        assert code == 1, (args, out)
        assert message in err, (args, err)
    assert operator.loop.github.dispatches() == []


async def test_a_downstream_without_the_app_is_a_failed_dispatch_that_says_so(
    operator: Operator,
) -> None:
    operator.loop.github.uninstall_app(BACKEND)

    code, out, _ = await operator.dispatch("--repo", BACKEND, "--pr", str(PR_NUMBER))

    assert code == 1
    assert f"{BACKEND} (L2): failed" in out
    assert f"the GitHub App is not installed on {BACKEND}" in out
    assert operator.loop.github.dispatches() == []


def test_both_or_neither_of_pr_and_sha_is_a_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "crcr", "dispatch", "--repo", BACKEND],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "exactly one of --pr N and --sha SHA" in result.stderr
