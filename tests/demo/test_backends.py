"""The demo's backends make a valid allowlist across every level, each with a workflow."""

from __future__ import annotations

from collections import Counter

from crcr.demo.backends import DEMO_BACKENDS, allowlist_yaml, devices, workflows
from crcr.relay.allowlist.model import Level, parse_allowlist


def test_the_allowlist_is_valid_and_names_every_backend_at_its_level() -> None:
    allowlist = parse_allowlist(allowlist_yaml())
    levels = {entry.repo: entry.level for entry in allowlist.entries}
    assert levels == {b.repo: Level[b.level] for b in DEMO_BACKENDS}
    assert set(Counter(b.level for b in DEMO_BACKENDS)) == {"L1", "L2", "L3", "L4"}
    assert 6 <= len(DEMO_BACKENDS) <= 10


def test_l3_backends_answer_to_their_device_label_and_l4_ones_have_oncalls() -> None:
    allowlist = parse_allowlist(allowlist_yaml())
    for entry in allowlist.entries:
        if entry.level is Level.L3:
            assert entry.device in devices()
        if entry.level >= Level.L3:
            assert entry.oncalls, f"{entry.repo} has nobody to notify"
    assert devices() == ["mlu", "xpu"]


def test_every_backend_has_a_workflow_with_distinct_job_names() -> None:
    specs = workflows()
    assert set(specs) == {b.repo for b in DEMO_BACKENDS}
    for spec in specs.values():
        names = spec.job_names()
        assert len(names) == len(set(names))
