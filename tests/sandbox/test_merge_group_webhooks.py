"""The sandbox's `merge_group` deliveries (SPEC §15) as GitHub's published description
has them: its webhook schemas, and the shape of its example payloads."""

from __future__ import annotations

import pytest
from tests.github_description import webhook_examples
from tests.sandbox.test_github_fidelity import webhook_schema_errors

from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook.events import Dispatch, Ignore, route_event
from crcr.sandbox.webhooks import merge_group_event

UPSTREAM = "pytorch/pytorch"


@pytest.mark.parametrize("action", ["checks_requested", "destroyed"])
def test_the_sandboxs_merge_group_payloads_match_githubs_webhook_schema(action: str) -> None:
    payload = merge_group_event(action, repo=UPSTREAM, head_sha="ab" * 20)

    assert webhook_schema_errors(payload, f"merge-group-{action.replace('_', '-')}") == []


def test_the_sandbox_sends_the_fields_githubs_examples_carry() -> None:
    (example, *_) = webhook_examples()["merge_group"]
    payload = merge_group_event(repo=UPSTREAM)

    assert set(example["merge_group"]) <= set(payload["merge_group"])
    assert set(example) - {"enterprise"} <= set(payload)


def test_checks_requested_is_dispatched_on_the_groups_head_and_destroyed_is_not() -> None:
    requested = merge_group_event(repo=UPSTREAM, head_sha="ab" * 20)
    destroyed = merge_group_event("destroyed", repo=UPSTREAM, head_sha="ab" * 20)

    assert route_event("merge_group", requested, upstream_repo=UPSTREAM) == Dispatch(
        UpstreamContext(UPSTREAM, "merge_group", "ab" * 20, None, action="checks_requested")
    )
    assert isinstance(route_event("merge_group", destroyed, upstream_repo=UPSTREAM), Ignore)
