"""The bisection's next move, pure (SPEC §14): what to send, when to conclude."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from crcr.relay.culprits.record import Purpose, Step, Verdict
from crcr.relay.culprits.search import Plan, plan, split_points


def step(
    number: int, index: int, conclusion: str | None, purpose: Purpose = Purpose.BISECT
) -> Step:
    return Step(number, index, f"sha{index}", f"d{number}", purpose, 0.0, conclusion)


def test_the_first_move_tests_the_middle_of_the_range() -> None:
    assert plan(7, [], parallel=1) == Plan(Verdict.RUNNING, dispatch=(2,))


def test_nothing_more_is_sent_while_a_step_is_waiting() -> None:
    assert plan(7, [step(1, 2, None)], parallel=1) == Plan(Verdict.RUNNING)


def test_parallel_steps_cut_the_range_into_more_parts() -> None:
    assert plan(200, [], parallel=3).dispatch == tuple(split_points(-1, 199, 3))
    assert len(plan(200, [], parallel=3).dispatch) == 3


def test_neighbouring_bounds_name_the_culprit_and_ask_for_one_retest() -> None:
    steps = [step(1, 2, "success"), step(2, 4, "failure"), step(3, 3, "failure")]
    assert plan(7, steps, parallel=1) == Plan(
        Verdict.RUNNING, culprit_index=3, dispatch=(3,), purpose=Purpose.CONFIRM
    )


def test_a_retest_that_fails_again_confirms_and_one_that_passes_is_inconclusive() -> None:
    steps = [step(1, 2, "success"), step(2, 4, "failure"), step(3, 3, "failure")]
    confirmed = plan(7, [*steps, step(4, 3, "failure", Purpose.CONFIRM)], parallel=1)
    doubtful = plan(7, [*steps, step(4, 3, "success", Purpose.CONFIRM)], parallel=1)
    assert (confirmed.verdict, confirmed.culprit_index) == (Verdict.CONFIRMED, 3)
    assert doubtful.verdict is Verdict.INCONCLUSIVE and "re-test" in (doubtful.reason or "")


def test_a_pass_after_a_failure_is_flakiness_not_a_culprit() -> None:
    verdict = plan(7, [step(1, 2, "failure"), step(2, 4, "success")], parallel=2)
    assert verdict.verdict is Verdict.INCONCLUSIVE and "disagree" in (verdict.reason or "")


def test_a_step_without_a_verdict_ends_the_search_inconclusive() -> None:
    verdict = plan(7, [step(1, 2, "cancelled")], parallel=1)
    assert verdict.verdict is Verdict.INCONCLUSIVE and "cancelled" in (verdict.reason or "")


def test_one_commit_is_its_own_culprit_without_a_dispatch() -> None:
    assert plan(1, [], parallel=1) == Plan(Verdict.CONFIRMED, culprit_index=0)


def search(count: int, culprit: int, parallel: int) -> tuple[Plan, int]:
    """Run the search against a backend that fails from `culprit` on; answers in order."""
    steps: list[Step] = []
    while True:
        move = plan(count, steps, parallel)
        if move.verdict is not Verdict.RUNNING:
            return move, len(steps)
        for index in move.dispatch:
            steps.append(step(len(steps) + 1, index, None, move.purpose))
        waiting = next(n for n, s in enumerate(steps) if s.conclusion is None)
        s = steps[waiting]
        answer = "failure" if s.index >= culprit else "success"
        steps[waiting] = step(s.number, s.index, answer, s.purpose)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_any_culprit_is_found_and_confirmed_within_log2_n_plus_one_dispatches(
    data: st.DataObject,
) -> None:
    count = data.draw(st.integers(min_value=1, max_value=400), label="commits")
    culprit = data.draw(st.integers(min_value=0, max_value=count - 1), label="culprit")
    move, dispatches = search(count, culprit, parallel=1)
    assert (move.verdict, move.culprit_index) == (Verdict.CONFIRMED, culprit)
    assert dispatches <= (math.ceil(math.log2(count)) + 1 if count > 1 else 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 120), st.integers(0, 119), st.integers(2, 6))
def test_parallel_searches_name_the_same_culprit(count: int, culprit: int, parallel: int) -> None:
    culprit = min(culprit, count - 1)
    move, _ = search(count, culprit, parallel)
    assert (move.verdict, move.culprit_index) == (Verdict.CONFIRMED, culprit)
