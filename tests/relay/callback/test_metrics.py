"""The callback counter: each outcome counted, its labelled child looked up only once."""

from __future__ import annotations

from prometheus_client import REGISTRY

from crcr.relay.callback.metrics import count_callback


def _counted(outcome: str) -> float:
    value = REGISTRY.get_sample_value("crcr_callbacks_total", {"outcome": outcome})
    return value or 0.0


def test_each_outcome_is_counted_under_its_own_label() -> None:
    accepted, duplicate = _counted("accepted"), _counted("duplicate")

    count_callback("accepted")
    count_callback("accepted")
    count_callback("duplicate")

    assert _counted("accepted") - accepted == 2
    assert _counted("duplicate") - duplicate == 1
