"""The fault plan decides, per call, how long to wait and whether to answer in GitHub's place."""

from __future__ import annotations

from crcr.sandbox.faults import FaultPlan, FaultRule


def test_latencies_add_up_and_the_first_rule_with_a_status_answers() -> None:
    plan = FaultPlan()
    plan.add(FaultRule(latency=0.1))
    first = plan.add(FaultRule(path="/repos/*/dispatches", status=502, latency=0.2))
    plan.add(FaultRule(status=503))

    decision = plan.decide("POST", "/repos/o/r/dispatches", "o/r")

    assert abs(decision.delay - 0.3) < 1e-9
    assert decision.answer is first


def test_a_hang_is_kept_apart_from_the_latency_it_adds_to() -> None:
    plan = FaultPlan()
    plan.add(FaultRule(latency=0.1, hang=30))

    decision = plan.decide("GET", "/repos/o/r", "o/r")

    assert (decision.latency, decision.hang) == (0.1, 30)
    assert decision.delay == 30.1


def test_a_rule_retires_after_its_times_and_later_calls_pass() -> None:
    plan = FaultPlan()
    plan.add(FaultRule(status=502, times=2))

    answers = [plan.decide("GET", "/repos/o/r", "o/r").answer for _ in range(3)]

    assert [a.status if a else None for a in answers] == [502, 502, None]


def test_a_rule_that_a_call_does_not_match_is_not_used_up() -> None:
    plan = FaultPlan()
    rule = plan.add(FaultRule(repo="o/other", method="POST", status=500, times=1))

    plan.decide("POST", "/repos/o/r/dispatches", "o/r")
    plan.decide("GET", "/repos/o/other", "o/other")

    assert rule.applied == 0
    assert plan.decide("POST", "/repos/o/other/dispatches", "O/Other").answer is rule


def test_an_answer_carries_retry_after_and_githubs_error_shape() -> None:
    rule = FaultRule(status=429, retry_after=9, headers={"x-ratelimit-remaining": "0"})

    assert rule.response_headers() == {"x-ratelimit-remaining": "0", "retry-after": "9"}
    assert rule.response_body()["message"] == "Injected fault"
