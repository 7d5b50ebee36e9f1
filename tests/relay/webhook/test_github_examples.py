"""GitHub's own example payloads (`@octokit/webhooks-examples`), signed and posted to the relay.

None may make the relay fail (5xx); pull_request and push examples route as SPEC §4
says (dispatched when they come from the upstream repository, ignored otherwise);
`ping` is answered 200.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.github_description import webhook_examples
from tests.relay.webhook.test_endpoint import (
    Relay,
    dispatched_to,
    open_relay,
    opener,
    relay,
    sandbox,
)

from crcr.sandbox.github_state import SandboxGitHub

__all__ = ["open_relay", "opener", "relay", "sandbox"]  # fixtures used below
UPSTREAM = "pytorch/pytorch"
DISPATCHED_ACTIONS = {"opened", "synchronize", "reopened", "closed"}
EXAMPLES = [
    pytest.param(event, example, id=f"{event}-{index}-{example.get('action', '')}")
    for event, examples in sorted(webhook_examples().items())
    for index, example in enumerate(examples)
]


def from_upstream(example: dict[str, Any]) -> dict[str, Any]:
    moved = copy.deepcopy(example)
    moved["repository"]["full_name"] = UPSTREAM
    return moved


def dispatches(event: str, example: dict[str, Any]) -> bool:
    if event == "pull_request":
        return example.get("action") in DISPATCHED_ACTIONS
    if event == "push":
        branch = example["repository"].get("default_branch")
        return example["ref"] == f"refs/heads/{branch}" and not example.get("deleted")
    if event == "merge_group":  # to the L4 backends (SPEC §15)
        return bool(example.get("action") == "checks_requested")
    return False


# Routing does not depend on where the state lives: one store (Redis) is enough here.
@pytest.mark.parametrize("opener", ["redis"], indirect=True)
@pytest.mark.parametrize(("event", "example"), EXAMPLES)
async def test_githubs_example_is_routed_without_a_failure(
    relay: Relay, sandbox: SandboxGitHub, event: str, example: dict[str, Any]
) -> None:
    elsewhere = await relay.send(event, example)
    assert elsewhere.status_code == 200
    assert dispatched_to(sandbox) == []
    if event == "ping" or "repository" not in example:
        return

    upstream = await relay.send(event, from_upstream(example))

    assert upstream.status_code < 500, upstream.text
    assert bool(dispatched_to(sandbox)) == dispatches(event, example)
