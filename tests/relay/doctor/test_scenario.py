"""`crcr doctor` over the sandbox: a healthy backend, an uninstalled one, a silent one.

The relay runs for real in front of the sandbox GitHub (SQLite or Redis state); a pull
request is dispatched, some backends report. The doctor then reads only what the relay
kept (allowlist, audit trail) and what GitHub says about the App.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import SANDBOX_API, StoreOpener
from tests.relay.checks_harness import (
    L2_REPO,
    L3_REPO,
    L4_REPO,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)

from crcr.relay.doctor.checks import Check, Subject, diagnose
from crcr.relay.doctor.cli import report_lines
from crcr.relay.doctor.github_app import AppLookups
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_server import create_sandbox_app

opener, signing_key, sandbox_app = harness.opener, harness.signing_key, sandbox_app


@pytest.fixture
async def world(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: harness.SigningKey
) -> AsyncIterator[World]:
    """The relay after one pull request: L4 reported, L2 uninstalled, L3 never reported."""
    sandbox = installed_sandbox(sandbox_app)
    sandbox.uninstall_app(L2_REPO)
    async with open_world(opener, tmp_path, sandbox, signing_key) as opened:
        opened.runtime.sweeper.extra_steps.clear()
        delivery = await opened.pull_request()
        reported = await opened.report(L4_REPO, delivery, "in_progress")
        assert reported.status_code == 200, reported.text
        assert opened.runtime.audit is not None
        await opened.runtime.audit.flush()
        yield opened


async def doctor(world: World, repo: str) -> list[Check]:
    sandbox = world.sandbox
    app = AppLookups(
        SANDBOX_API,
        str(sandbox.app.app_id),
        sandbox.app.private_key_pem,
        transport=httpx.ASGITransport(app=create_sandbox_app(sandbox)),
    )
    try:
        return await diagnose(
            Subject(
                repo=repo,
                settings=world.runtime.settings,
                store=world.runtime.store,
                allowlist=world.runtime.allowlist,
                allowlist_source="allowlist.yaml",
                app=app,
            )
        )
    finally:
        await app.aclose()


def failing(checks: list[Check]) -> list[str]:
    return [check.name for check in checks if not check.ok]


async def test_a_healthy_backend_passes_every_check(world: World) -> None:
    checks = await doctor(world, L4_REPO)

    assert failing(checks) == [], checks
    answers = {check.name: check.answer for check in checks}
    assert answers["allowlist entry"].startswith(
        "L4 as org/critical, device critical, oncalls oncall1, oncall2"
    )
    assert answers["level"] == "L4, device critical (its label ciflow/crcr/critical if demoted)"
    assert answers["App installed"].startswith("yes, installation")
    assert ": sent (delivery " in answers["last dispatch"]
    assert ": accepted (in_progress, delivery " in answers["last callback"]
    assert answers["OIDC issuer"] == "http://issuer.sandbox/oidc (github, trusted)"
    assert "created" in answers["L3/L4 check runs"]
    assert report_lines(L4_REPO, checks)[-1] == "all checks pass"


async def test_an_uninstalled_backend_is_told_where_to_install_the_app(world: World) -> None:
    checks = await doctor(world, L2_REPO)

    assert failing(checks) == ["App installed", "last dispatch", "last callback", "OIDC issuer"]
    lines = report_lines(L2_REPO, checks)
    assert "  [FAIL] App installed" in lines[3] and lines[3].endswith("no")
    assert lines[-1] == (
        "next step (App installed): install the App on org/report:"
        " https://github.com/apps/crcr-sandbox/installations/new"
    )
    dispatch = checks[3]
    assert ": failed (delivery " in dispatch.answer
    assert dispatch.next_step == "the App must be installed on the repository (see App installed)"


async def test_a_backend_that_never_reports_is_told_how_to_report(world: World) -> None:
    checks = await doctor(world, L3_REPO)

    assert failing(checks) == ["last callback", "OIDC issuer", "L3/L4 check runs"]
    assert checks[4].answer == "none received"
    assert report_lines(L3_REPO, checks)[-1].startswith(
        "next step (last callback): the downstream workflow must run on repository_dispatch"
    )


async def test_a_refused_callback_says_why(world: World) -> None:
    delivery = await world.pull_request("synchronize", sha="7" * 40)
    body = world.callback_body(L3_REPO, delivery, "completed", "success")
    refused = await world.post_callback(L3_REPO, body)  # completed without in_progress
    assert refused.status_code == 400
    assert world.runtime.audit is not None
    await world.runtime.audit.flush()

    callback = (await doctor(world, L3_REPO))[4]

    assert not callback.ok and ": refused 400: " in callback.answer
    assert callback.next_step == (
        "the body must echo the dispatch's client_payload, as crcr-report does"
    )
