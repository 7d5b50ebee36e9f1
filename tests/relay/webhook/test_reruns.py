"""Re-run requests on crcr's check runs (SPEC §7): "Re-run" on a check or a whole suite.

A backend reports → its check run is on the PR → a maintainer clicks "Re-run" → the
sandbox GitHub records the re-run of the downstream workflow run.
"""

from __future__ import annotations

from typing import Any

from tests.relay import callback_harness, checks_harness
from tests.relay.checks_harness import (
    DEVICE_LABEL,
    HEAD_SHA,
    L2_REPO,
    L3_REPO,
    L4_REPO,
    PR_NUMBER,
    RUN_ID,
    UPSTREAM,
    World,
)

from crcr.relay.allowlist.model import parse_allowlist
from crcr.relay.checks.check_runs import DownstreamRun
from crcr.relay.webhook.reruns import runs_of_check_runs, why_not_rerunnable
from crcr.sandbox.webhooks import check_run_event, check_suite_event

opener, signing_key = callback_harness.opener, callback_harness.signing_key
sandbox_app, world = checks_harness.sandbox_app, checks_harness.world


def rerequested_check_run(name: str, external_id: str) -> dict[str, Any]:
    payload = check_run_event(repo=UPSTREAM, head_sha=HEAD_SHA, name=name, pull_number=PR_NUMBER)
    payload["check_run"]["external_id"] = external_id
    return payload


def reruns(world: World) -> list[tuple[str, int, str]]:
    return [(r.repo, r.run_id, r.kind) for r in world.sandbox.reruns()]


# --- check_run: re-run the failed jobs of one downstream run ---------------------------


async def test_rerequesting_a_crcr_check_run_reruns_its_failed_jobs(world: World) -> None:
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="completed", conclusion="failure")
    payload = rerequested_check_run(f"crcr/{L4_REPO}/ci/test", f"{RUN_ID}:{PR_NUMBER}")

    answer = await world.webhook("check_run", payload)

    assert answer.status_code == 200, answer.text
    assert answer.json()["rerun"] == [{"repo": L4_REPO, "run_id": RUN_ID, "outcome": "started"}]
    assert reruns(world) == [(L4_REPO, RUN_ID, "rerun-failed-jobs")]


async def test_a_run_that_is_still_going_is_left_alone_without_an_error(world: World) -> None:
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID, status="in_progress", conclusion=None)
    payload = rerequested_check_run(f"crcr/{L4_REPO}/ci/test", f"{RUN_ID}:{PR_NUMBER}")

    answer = await world.webhook("check_run", payload)

    assert answer.status_code == 200, answer.text
    assert [r["outcome"] for r in answer.json()["already_running"]] == ["already_running"]
    assert reruns(world) == []


async def test_check_runs_crcr_did_not_create_are_ignored(world: World) -> None:
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID)
    payload = rerequested_check_run("lint / flake8", f"{RUN_ID}:{PR_NUMBER}")

    answer = await world.webhook("check_run", payload)

    assert answer.status_code == 200
    assert answer.json()["ignored"] is True
    assert reruns(world) == []


async def test_a_repo_below_l3_is_never_rerun(world: World) -> None:
    world.sandbox.add_workflow_run(L2_REPO, RUN_ID)
    payload = rerequested_check_run(f"crcr/{L2_REPO}/ci/test", f"{RUN_ID}:{PR_NUMBER}")

    answer = await world.webhook("check_run", payload)

    assert answer.json()["ignored"] is True
    assert answer.json()["reason"] == (
        f"{L2_REPO} is at L2: only L3/L4 backends are re-run from upstream checks"
    )
    assert reruns(world) == []


BUILD_UUID = "0190a1b2-7c1e-7d3a-9f00-00000000b111"
BUILD_URL = "https://buildkite.com/acme/npu-tests/builds/512"


async def test_a_buildkite_backends_check_run_is_not_rerun_and_the_answer_says_why(
    world: World,
) -> None:
    name = f"crcr/{L4_REPO}/npu-tests/test"
    payload = rerequested_check_run(name, f"{BUILD_UUID}:{PR_NUMBER}")
    payload["check_run"]["details_url"] = BUILD_URL

    answer = await world.webhook("check_run", payload)

    assert answer.status_code == 200, answer.text
    assert answer.json()["ignored"] is True
    assert answer.json()["reason"] == (
        f"{name!r} is a Buildkite build, and GitHub can re-run only Actions runs: "
        f"re-run it in {L4_REPO}'s own CI ({BUILD_URL})"
    )
    assert reruns(world) == []


async def test_a_check_run_crcr_did_not_create_is_answered_as_such(world: World) -> None:
    answer = await world.webhook("check_run", rerequested_check_run("lint / flake8", "1:2"))

    assert answer.json()["reason"] == "'lint / flake8' is not a crcr check run"


async def test_a_run_github_does_not_know_is_a_failed_delivery(world: World) -> None:
    payload = rerequested_check_run(f"crcr/{L4_REPO}/ci/test", f"{RUN_ID}:{PR_NUMBER}")

    answer = await world.webhook("check_run", payload)

    assert answer.status_code == 502
    [failed] = answer.json()["errors"]
    assert (failed["repo"], failed["run_id"]) == (L4_REPO, RUN_ID)
    assert "404" in failed["error"]


# --- check_suite: re-run every distinct run ---------------------------------------------


async def test_rerequesting_the_suite_reruns_each_distinct_run_once(world: World) -> None:
    delivery = await world.pull_request("opened", labels=(DEVICE_LABEL,))
    for job in ("build", "test"):
        await world.report(L4_REPO, delivery, "in_progress", job=job)
        await world.report(L4_REPO, delivery, "completed", "failure", job=job)
    await world.report(L3_REPO, delivery, "in_progress", run_id=5005)
    world.sandbox.add_workflow_run(L4_REPO, RUN_ID)
    world.sandbox.add_workflow_run(L3_REPO, 5005, status="in_progress", conclusion=None)
    buildkite_check = f"crcr/{L4_REPO}/npu-tests/test"
    await world.runtime.github.create_check_run(
        UPSTREAM,
        name=buildkite_check,
        head_sha=HEAD_SHA,
        external_id=f"{BUILD_UUID}:{PR_NUMBER}",
        details_url=BUILD_URL,
        status="completed",
        conclusion="failure",
    )
    suite_ids = {run["check_suite"]["id"] for run in world.check_runs()}
    assert len(suite_ids) == 1
    payload = check_suite_event(repo=UPSTREAM, head_sha=HEAD_SHA, pull_number=PR_NUMBER)
    payload["check_suite"]["id"] = suite_ids.pop()

    answer = await world.webhook("check_suite", payload)

    assert answer.status_code == 200, answer.text
    assert reruns(world) == [(L4_REPO, RUN_ID, "rerun")]
    assert [r["repo"] for r in answer.json()["already_running"]] == [L3_REPO]
    assert answer.json()["skipped"] == [
        f"{buildkite_check!r} is a Buildkite build, and GitHub can re-run only Actions runs: "
        f"re-run it in {L4_REPO}'s own CI ({BUILD_URL})"
    ]


async def test_a_suite_github_does_not_know_is_ignored(world: World) -> None:
    payload = check_suite_event(repo=UPSTREAM, head_sha=HEAD_SHA, pull_number=PR_NUMBER)

    answer = await world.webhook("check_suite", payload)

    # A redelivery could not make GitHub know the suite: 200, so it is not retried.
    assert answer.status_code == 200
    assert answer.json()["ignored"] is True
    assert "check suite" in answer.json()["reason"]


# --- pure: which runs a list of check runs stands for --------------------------------------


def test_runs_are_distinct_per_repo_and_run_id_in_first_seen_order() -> None:
    check_runs = [
        {"name": "crcr/org/critical/ci/test", "external_id": "9001:77"},
        {"name": "crcr/org/critical/ci/build", "external_id": "9001:77"},
        {"name": "crcr/Org/Critical/nightly/x", "external_id": "9001:77"},
        {"name": "crcr/org/xpu-backend/ci/test", "external_id": "5005:77"},
        {"name": "someone-else/check", "external_id": "1:77"},
    ]

    assert runs_of_check_runs(check_runs) == [
        DownstreamRun("org/critical", 9001),
        DownstreamRun("org/xpu-backend", 5005),
    ]


def test_each_check_run_that_cannot_be_rerun_has_its_own_reason() -> None:
    allowlist = parse_allowlist(f"L2:\n  - {L2_REPO}\nL4:\n  - {L4_REPO}\n")
    actions = {"name": f"crcr/{L4_REPO}/ci/test", "external_id": "9001:77"}
    other_ci = {"name": f"crcr/{L4_REPO}/ci/test", "external_id": "abc:77", "details_url": ""}

    assert why_not_rerunnable(actions, allowlist) is None
    assert why_not_rerunnable(other_ci, allowlist) == (
        f"'crcr/{L4_REPO}/ci/test' is not a GitHub Actions run, and GitHub can re-run only "
        f"Actions runs: re-run it in {L4_REPO}'s own CI"
    )
    stranger = {"name": "crcr/org/stranger/ci/test", "external_id": "9001:77"}
    assert why_not_rerunnable(stranger, allowlist) == (
        "org/stranger is not on the allowlist: only L3/L4 backends are re-run from upstream checks"
    )
    assert why_not_rerunnable({"name": "crcr/short"}, allowlist) == (
        "'crcr/short' is not a crcr check run"
    )
