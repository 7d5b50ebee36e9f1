"""An entry's budget fields in the allowlist (SPEC §15): read, and refused by name."""

from __future__ import annotations

import pytest

from crcr.relay.allowlist.budget_fields import EntryBudget
from crcr.relay.allowlist.model import AllowlistError, Level, parse_allowlist
from crcr.relay.levels.allowlist_edit import move_entry

BUDGETED = """\
L3:
  xpu:
    org/xpu: {oncalls: [a], max_concurrent: 4, paths: ["src/**"], paths_ignore: ["**/*.md"]}
L4:
  - org/critical: {oncalls: [b], max_concurrent: 2}
"""


def test_budget_fields_are_read_into_the_entry() -> None:
    allowlist = parse_allowlist(BUDGETED)

    xpu, critical = allowlist.entry("org/xpu"), allowlist.entry("org/critical")
    assert xpu is not None and critical is not None
    assert xpu.budget == EntryBudget(4, ("src/**",), ("**/*.md",))
    assert critical.budget == EntryBudget(max_concurrent=2)


def test_an_entry_without_budget_fields_has_none() -> None:
    entry = parse_allowlist("L2:\n  - org/r\n").entry("org/r")
    assert entry is not None
    assert entry.budget == EntryBudget()
    assert not entry.budget.filters_paths


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{max_concurrent: 0}", "L2[0]: max_concurrent must be a whole number from 1 to 10000"),
        ("{max_concurrent: two}", "L2[0]: max_concurrent must be a whole number from 1 to 10000"),
        ("{max_concurrent: true}", "L2[0]: max_concurrent must be a whole number"),
        ("{paths: src/**}", "L2[0]: paths must be a non-empty list of glob patterns, got a string"),
        ("{paths: []}", "L2[0]: paths must be a non-empty list of glob patterns"),
        ("{paths_ignore: [1]}", "L2[0]: paths_ignore must hold non-empty glob strings"),
        ("{max_concurent: 2}", "L2[0]: unknown field(s) max_concurent"),
    ],
)
def test_a_bad_budget_field_is_refused_naming_the_entry_and_field(value: str, message: str) -> None:
    with pytest.raises(AllowlistError) as refused:
        parse_allowlist(f"L2:\n  - org/r: {value}\n")
    assert message in str(refused.value)


def test_a_level_change_keeps_the_budget_fields() -> None:
    demoted = parse_allowlist(move_entry(BUDGETED, "org/critical", Level.L3, "critical"))
    lowered = parse_allowlist(move_entry(BUDGETED, "org/xpu", Level.L2))

    critical, xpu = demoted.entry("org/critical"), lowered.entry("org/xpu")
    assert critical is not None and critical.level == Level.L3
    assert critical.budget == EntryBudget(max_concurrent=2)
    assert xpu is not None and xpu.level == Level.L2
    assert xpu.budget == EntryBudget(4, ("src/**",), ("**/*.md",))
