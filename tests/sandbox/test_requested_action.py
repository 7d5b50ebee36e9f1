"""The sandbox's `check_run` `requested_action` delivery (a pressed check-run button,
SPEC §15) as GitHub's published webhook schema describes it, and how the relay routes it."""

from __future__ import annotations

from tests.sandbox.test_github_fidelity import webhook_schema_errors

from crcr.relay.webhook.events import Rerequest, route_event
from crcr.sandbox.webhooks import check_run_event

UPSTREAM = "pytorch/pytorch"


def test_a_pressed_button_matches_githubs_requested_action_schema() -> None:
    payload = check_run_event(
        "requested_action", repo=UPSTREAM, external_id="9001:77", identifier="snooze-24h"
    )

    assert payload["requested_action"] == {"identifier": "snooze-24h"}
    assert webhook_schema_errors(payload, "check-run-requested-action") == []


def test_a_pressed_button_is_routed_like_a_re_request() -> None:
    payload = check_run_event("requested_action", repo=UPSTREAM, identifier="rerun-failed")

    assert route_event("check_run", payload, upstream_repo=UPSTREAM) == Rerequest("check_run")
