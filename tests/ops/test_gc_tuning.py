"""The serving process's collector settings."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from crcr.ops.gc_tuning import SERVING_THRESHOLDS, freeze_what_exists, tune_for_serving


@pytest.fixture
def restored_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored_gc")
def test_serving_collects_less_often_and_skips_the_start_up_objects() -> None:
    tune_for_serving()

    assert gc.get_threshold() == SERVING_THRESHOLDS
    assert gc.get_freeze_count() > 0
    # Cycles made afterwards are still collected.
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1


@pytest.mark.usefixtures("restored_gc")
def test_what_the_app_opens_at_start_up_is_frozen_too() -> None:
    tune_for_serving()
    frozen_at_build = gc.get_freeze_count()
    opened_later = [[n] for n in range(1000)]  # lists: always tracked by the collector

    freeze_what_exists()

    assert gc.get_freeze_count() >= frozen_at_build + len(opened_later)
