"""Upstream traffic: a plausible stream of events the relay routes as it would GitHub's."""

from __future__ import annotations

import random

from crcr.demo.traffic import LABEL_PREFIX, UpstreamTraffic
from crcr.relay.webhook.events import Dispatch, LabelDevice, route_event

UPSTREAM = "crcr-demo/pytorch"


def traffic(seed: int = 5, **options: int) -> UpstreamTraffic:
    return UpstreamTraffic(
        random.Random(seed), upstream=UPSTREAM, devices=["xpu", "mlu"], **options
    )


def test_the_first_event_opens_a_pr_numbered_from_where_the_last_run_stopped() -> None:
    upstream = traffic(first_pr_number=150_007)
    event = upstream.next_event()
    assert (event.event, event.payload["action"]) == ("pull_request", "opened")
    assert event.payload["pull_request"]["number"] == 150_007
    assert upstream.next_number == 150_008
    assert event.summary == "PR #150007 opened"


def test_every_event_is_one_the_relay_dispatches_or_turns_into_a_label() -> None:
    upstream = traffic()
    kinds: set[str] = set()
    for _ in range(300):
        event = upstream.next_event()
        decision = route_event(event.event, event.payload, upstream_repo=UPSTREAM)
        assert isinstance(decision, Dispatch | LabelDevice), (event.summary, decision)
        kinds.add(event.payload.get("action") or event.event)
    assert kinds == {"opened", "synchronize", "labeled", "closed", "push"}


def test_prs_are_updated_labelled_and_closed_only_while_open() -> None:
    upstream = traffic(seed=9)
    open_prs: dict[int, str] = {}
    for _ in range(300):
        event = upstream.next_event()
        if event.event == "push":
            assert event.payload["ref"] == "refs/heads/main"
            continue
        number = event.payload["pull_request"]["number"]
        action = event.payload["action"]
        head = event.payload["pull_request"]["head"]["sha"]
        if action == "opened":
            assert number not in open_prs
        else:
            assert number in open_prs, f"{action} on PR #{number}, which is not open"
        if action == "synchronize":
            assert event.payload["before"] == open_prs[number] != head
        if action == "closed":
            del open_prs[number]
        else:
            open_prs[number] = head
    assert open_prs.keys() == upstream.open_prs.keys()


def test_a_label_stays_on_the_pr_for_its_later_events() -> None:
    upstream = traffic(seed=2)
    labelled: dict[int, set[str]] = {}
    for _ in range(300):
        event = upstream.next_event()
        if event.event != "pull_request":
            continue
        number = event.payload["pull_request"]["number"]
        names = {label["name"] for label in event.payload["pull_request"]["labels"]}
        assert labelled.get(number, set()) <= names
        if event.payload["action"] == "labeled":
            assert event.payload["label"]["name"].startswith(LABEL_PREFIX)
            labelled[number] = names
    assert labelled, "some PR was labelled"


def test_no_more_than_max_open_prs_stay_open() -> None:
    upstream = traffic(max_open=3)
    for _ in range(100):
        upstream.next_event()
        assert len(upstream.open_prs) <= 3


def test_arrivals_average_the_requested_rate() -> None:
    upstream = traffic()
    pauses = [upstream.pause_before_next(events_per_minute=120) for _ in range(2000)]
    assert 0.45 < sum(pauses) / len(pauses) < 0.55
