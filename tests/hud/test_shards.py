"""Shards of one job share a column, and the column shows the worst of them."""

from __future__ import annotations

import pytest

from crcr.hud.shards import column_name, severity, shard_base


@pytest.mark.parametrize(
    ("job", "base"),
    [
        ("test-1", "test"),
        ("test-8", "test"),
        ("test (1, 8)", "test"),
        ("test (default, 3, 8, linux.2xlarge)", "test"),
        ("build", "build"),
        ("build-py311", "build-py311"),
        ("lint (ruff)", "lint (ruff)"),
    ],
)
def test_shard_names_collapse_to_their_job(job: str, base: str) -> None:
    assert shard_base(job) == base


def test_the_column_names_the_workflow_and_the_job() -> None:
    assert column_name("CI", "test-3") == "CI / test"
    assert column_name("Nightly", "") == "Nightly"


def test_red_outranks_running_which_outranks_green() -> None:
    failure = severity("completed", "failure")
    timed_out = severity("completed", "timed_out")
    running = severity("in_progress", None)
    success = severity("completed", "success")

    assert failure > timed_out > running > success > severity("completed", "skipped")
