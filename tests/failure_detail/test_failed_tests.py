"""A downstream's failed-test list is bounded, never refused (SPEC §11)."""

from __future__ import annotations

from typing import Any

import pytest

from crcr.failure_detail.failed_tests import (
    DROPPED_KEY,
    MAX_ENTRIES,
    bound_failed_tests,
    bound_test_results,
)


def test_entries_within_the_limits_are_kept_as_given() -> None:
    raw = [{"name": "test_add", "file": "test/test_ops.py", "message": "AssertionError"}]
    bounded = bound_failed_tests(raw)
    assert bounded.entries == raw
    assert bounded.dropped == 0 and bounded.refused is None


def test_at_most_100_entries_are_kept_and_the_rest_counted() -> None:
    bounded = bound_failed_tests([{"name": f"t{n}"} for n in range(250)])
    assert len(bounded.entries) == MAX_ENTRIES
    assert bounded.entries[-1] == {"name": "t99"}
    assert bounded.dropped == 150


@pytest.mark.parametrize(
    ("field", "given", "kept"),
    [("name", 500, 300), ("file", 400, 300), ("message", 5000, 2000)],
)
def test_long_strings_are_truncated(field: str, given: int, kept: int) -> None:
    entry = {"name": "t", field: "x" * given}
    (bounded,) = bound_failed_tests([entry]).entries
    assert len(bounded[field]) == kept


UNUSABLE: list[tuple[str, Any]] = [
    ("a string", "test_add"),
    ("no name", {"file": "a.py"}),
    ("blank name", {"name": "  "}),
    ("name a number", {"name": 3}),
    ("message an object", {"name": "t", "message": {"text": "x"}}),
]


@pytest.mark.parametrize("entry", [e for _, e in UNUSABLE], ids=[n for n, _ in UNUSABLE])
def test_an_unusable_entry_is_dropped_and_counted(entry: Any) -> None:
    bounded = bound_failed_tests([entry, {"name": "kept"}])
    assert bounded.entries == [{"name": "kept"}]
    assert bounded.dropped == 1


def test_unknown_keys_are_dropped() -> None:
    (entry,) = bound_failed_tests([{"name": "t", "duration": 3, "stdout": "..."}]).entries
    assert entry == {"name": "t"}


def test_a_list_that_is_not_a_list_is_ignored_with_a_reason() -> None:
    bounded = bound_failed_tests({"name": "t"})
    assert bounded.entries == [] and bounded.refused == "failed_tests must be a list"


def test_test_results_carry_the_dropped_count() -> None:
    results, problem = bound_test_results(
        {"passed": 1, "failed": 120, "failed_tests": [{"name": f"t{n}"} for n in range(120)]}
    )
    assert problem is None
    assert results["failed"] == 120
    assert len(results["failed_tests"]) == 100 and results[DROPPED_KEY] == 20


def test_bounding_twice_keeps_the_count() -> None:
    once, _ = bound_test_results({"failed_tests": [{"name": f"t{n}"} for n in range(120)]})
    twice, _ = bound_test_results(once)
    assert twice == once


def test_test_results_without_a_list_are_left_alone() -> None:
    assert bound_test_results({"passed": 3}) == ({"passed": 3}, None)


def test_a_malformed_list_is_removed_from_test_results() -> None:
    results, problem = bound_test_results({"passed": 3, "failed_tests": "many"})
    assert results == {"passed": 3} and problem == "failed_tests must be a list"
