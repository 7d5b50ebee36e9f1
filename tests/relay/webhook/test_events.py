"""Which upstream events are dispatched, recorded or ignored (SPEC §4)."""

from typing import Any

import pytest

from crcr.relay.webhook.events import Dispatch, Ignore, LabelDevice, Rerequest, route_event

UPSTREAM = "pytorch/pytorch"


def pr_event(action: str, **extra: Any) -> dict[str, Any]:
    return {
        "action": action,
        "number": 7,
        "pull_request": {
            "number": 7,
            "head": {"sha": "a" * 40, "ref": "feature"},
            "labels": [{"name": "ciflow/crcr/xpu"}, {"name": "module: cpu"}],
        },
        "repository": {"full_name": "PyTorch/PyTorch", "default_branch": "main"},
        **extra,
    }


def push_event(ref: str = "refs/heads/main", **extra: Any) -> dict[str, Any]:
    return {
        "ref": ref,
        "after": "b" * 40,
        "deleted": False,
        "repository": {"full_name": UPSTREAM, "default_branch": "main"},
        **extra,
    }


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened", "closed"])
def test_pull_request_lifecycle_actions_are_dispatched(action: str) -> None:
    decision = route_event("pull_request", pr_event(action), upstream_repo=UPSTREAM)
    assert isinstance(decision, Dispatch)
    assert decision.context.head_sha == "a" * 40
    assert decision.context.pr_number == 7
    assert decision.context.labels == ("ciflow/crcr/xpu", "module: cpu")
    assert decision.context.action == action


def test_other_pull_request_actions_are_ignored() -> None:
    decision = route_event("pull_request", pr_event("edited"), upstream_repo=UPSTREAM)
    assert isinstance(decision, Ignore)


def test_a_device_label_opts_the_device_in() -> None:
    event = pr_event("labeled", label={"name": "ciflow/crcr/xpu"})
    decision = route_event("pull_request", event, upstream_repo=UPSTREAM)
    assert isinstance(decision, LabelDevice)
    assert decision.device == "xpu"


@pytest.mark.parametrize("label", ["ciflow/trunk", "ciflow/crcr/", "bug"])
def test_other_labels_are_ignored(label: str) -> None:
    event = pr_event("labeled", label={"name": label})
    assert isinstance(route_event("pull_request", event, upstream_repo=UPSTREAM), Ignore)


def test_events_of_other_repositories_are_ignored() -> None:
    event = pr_event("opened", repository={"full_name": "someone/fork"})
    decision = route_event("pull_request", event, upstream_repo=UPSTREAM)
    assert isinstance(decision, Ignore)
    assert "someone/fork" in decision.reason


@pytest.mark.parametrize("event", ["issues", "workflow_run", "ping", "release"])
def test_unrelayed_event_types_are_ignored(event: str) -> None:
    assert isinstance(route_event(event, pr_event("opened"), upstream_repo=UPSTREAM), Ignore)


def test_a_push_to_the_default_branch_is_dispatched_with_its_sha() -> None:
    decision = route_event("push", push_event(), upstream_repo=UPSTREAM)
    assert isinstance(decision, Dispatch)
    assert decision.context.event_type == "push"
    assert decision.context.head_sha == "b" * 40
    assert decision.context.pr_number is None


@pytest.mark.parametrize(
    "event",
    [
        push_event("refs/tags/v2.5.0"),
        push_event(deleted=True),
        push_event("refs/heads/feature"),
    ],
)
def test_tags_deletions_and_other_branches_are_not_dispatched(event: dict[str, Any]) -> None:
    assert isinstance(route_event("push", event, upstream_repo=UPSTREAM), Ignore)


def test_configured_branch_patterns_are_dispatched() -> None:
    event = push_event("refs/heads/release/2.6")
    decision = route_event("push", event, upstream_repo=UPSTREAM, push_branches=["release/*"])
    assert isinstance(decision, Dispatch)


@pytest.mark.parametrize("event", ["check_run", "check_suite"])
def test_check_rerequests_are_recognised(event: str) -> None:
    payload = {"action": "rerequested", "repository": {"full_name": UPSTREAM}}
    assert route_event(event, payload, upstream_repo=UPSTREAM) == Rerequest(event)
