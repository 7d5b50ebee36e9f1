"""Relay instances with a budgeted allowlist over one sandbox and one state store (SPEC §15).

Built on the check-run scenarios' harness: real relay apps, the sandbox GitHub, real
stores. Several instances share the store, as a scaled deployment does; nothing runs
in the background, `settle()` is one sweeper pass of the instance it is called on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.relay.callback_harness import StoreOpener
from tests.relay.checks_harness import UPSTREAM, World, installed_sandbox, open_world

from crcr.relay.budgets.gate import BudgetGate
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks import pull_request_event

CAPPED, FILTERED, OPEN = "org/critical", "org/xpu-backend", "org/report"

BUDGETED_ALLOWLIST = f"""
L2:
  - {OPEN}
  - {FILTERED}: {{paths: ["src/**", "torch/**"], paths_ignore: ["**/*.md"]}}
L4:
  - {CAPPED}: {{oncalls: [oncall1], max_concurrent: 1}}
"""


class Budgeted:
    """Opens relay instances on one store and one sandbox, and speaks for upstream."""

    def __init__(
        self, opener: StoreOpener, tmp_path: Path, app: SandboxApp, signing_key: SigningKey
    ) -> None:
        self.opener = opener
        self.tmp_path = tmp_path
        self.signing_key = signing_key
        self.sandbox: SandboxGitHub = installed_sandbox(app)
        self.allowlist = tmp_path / "budgeted-allowlist.yaml"
        self.allowlist.write_text(BUDGETED_ALLOWLIST)

    @asynccontextmanager
    async def instance(
        self, clock: Callable[[], float] = time.time, **overrides: Any
    ) -> AsyncIterator[World]:
        """One relay instance; its sweeper runs only the budget's step of the extras.
        `clock` is its time for jobs (a restart hours later), `overrides` settings."""
        async with open_world(
            self.opener,
            self.tmp_path,
            self.sandbox,
            self.signing_key,
            allowlist_url=str(self.allowlist),
            clock=clock,
            **overrides,
        ) as world:
            gate = world.runtime.webhook.budget
            assert isinstance(gate, BudgetGate)
            world.runtime.sweeper.extra_steps[:] = [gate.cap.refill]
            yield world


async def open_pr(
    world: World, number: int, sha: str, action: str = "opened", **options: Any
) -> tuple[str, dict[str, Any]]:
    """Send a pull_request event for PR `number` at `sha`; (delivery id, the answer)."""
    delivery = str(uuid.uuid4())
    payload = pull_request_event(action, repo=UPSTREAM, number=number, head_sha=sha, **options)
    response = await world.webhook("pull_request", payload, delivery)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return delivery, answer


def dispatched_prs(world: World, repo: str) -> list[int]:
    """The PR numbers `repo` was sent, in the order the sandbox received them."""
    return [
        int(d.client_payload["payload"]["pull_request"]["number"])
        for d in world.sandbox.dispatches(repo)
    ]
