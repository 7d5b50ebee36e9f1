"""Moving one allowlist entry keeps every other byte of the file (SPEC §10.1)."""

from __future__ import annotations

import difflib
from dataclasses import replace

import pytest

from crcr.relay.allowlist.model import Level, parse_allowlist
from crcr.relay.levels.allowlist_edit import AllowlistEditError, move_entry, verify_move

ALLOWLIST = """\
# Downstream backends of pytorch/pytorch. Keep each level sorted.
L1:
  - org1/repo1                 # dispatch only
L2:
  - org2/repo2                 # + results on the HUD

L3:
  # one key per device
  xpu:                         # ciflow/crcr/xpu
    org3/xpu-backend: [oncall1, oncall2]   # Intel
    org3/xpu-extra: [someone]
L4:
  - org4/critical: oncall1, oncall2   # + a check run on every PR
  - org4/second
# end of file
"""


def changed_lines(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_demoting_an_l3_entry_moves_only_its_line_to_l2() -> None:
    edited = move_entry(ALLOWLIST, "org3/xpu-backend", Level.L2)
    assert changed_lines(ALLOWLIST, edited) == [
        "+  - org3/xpu-backend: [oncall1, oncall2]   # Intel",
        "-    org3/xpu-backend: [oncall1, oncall2]   # Intel",
    ]
    after = parse_allowlist(edited)
    assert after.level_of("org3/xpu-backend") == Level.L2
    assert after.oncalls("org3/xpu-backend") == ("oncall1", "oncall2")
    assert "# one key per device" in edited and edited.endswith("# end of file\n")


def test_demoting_an_l4_entry_puts_it_under_the_given_device() -> None:
    edited = move_entry(ALLOWLIST, "org4/critical", Level.L3, device="xpu")
    assert changed_lines(ALLOWLIST, edited) == [
        "+    org4/critical: oncall1, oncall2   # + a check run on every PR",
        "-  - org4/critical: oncall1, oncall2   # + a check run on every PR",
    ]
    assert parse_allowlist(edited).device_of("org4/critical") == "xpu"


def test_an_l4_entry_without_a_device_moves_under_its_repositorys_name() -> None:
    """SPEC §10.2: `org4/second` is demoted under `L3: second:`, never skipped."""
    edited = move_entry(ALLOWLIST, "org4/second", Level.L3)
    assert changed_lines(ALLOWLIST, edited) == [
        "+  second:",
        "+    org4/second: []",
        "-  - org4/second",
    ]
    assert parse_allowlist(edited).repos_for_device("second") == ("org4/second",)


def test_an_l4_entry_naming_its_device_moves_under_it_keeping_the_key() -> None:
    text = "L3:\n  npu:\n    a/x: []\nL4:\n  - a/named: {oncalls: [o], device: npu}\n"
    edited = move_entry(text, "a/named", Level.L3)
    assert edited == ("L3:\n  npu:\n    a/x: []\n    a/named: {oncalls: [o], device: npu}\nL4:\n")


def test_promoting_to_a_new_device_adds_the_device_key() -> None:
    edited = move_entry(ALLOWLIST, "org2/repo2", Level.L3, device="npu")
    assert changed_lines(ALLOWLIST, edited) == [
        "-  - org2/repo2                 # + results on the HUD",
        "+  npu:",
        "+    org2/repo2: []                 # + results on the HUD",
    ]


def test_a_missing_level_is_added_in_level_order() -> None:
    text = "L1:\n  - a/one\nL4:\n  - a/four\n"
    edited = move_entry(text, "a/four", Level.L3, device="xpu")
    assert edited == "L1:\n  - a/one\nL3:\n  xpu:\n    a/four: []\nL4:\n"


def test_an_empty_flow_section_is_opened_and_multi_line_entries_move_whole() -> None:
    text = "L2: []\nL3:\n  xpu:\n    a/b:\n      oncalls: [x]\n      events: [nightly]\n"
    edited = move_entry(text, "a/b", Level.L2)
    assert edited == "L2:\n  - a/b:\n      oncalls: [x]\n      events: [nightly]\nL3:\n  xpu:\n"
    assert parse_allowlist(edited).events_of("a/b") == frozenset({"nightly"})


def test_a_flow_style_target_is_left_to_people() -> None:
    text = "L2: [a/x, a/y]\nL3:\n  xpu:\n    a/b: []\n"
    with pytest.raises(AllowlistEditError, match="flow style"):
        move_entry(text, "a/b", Level.L2)


def test_moving_to_l3_without_a_device_is_refused() -> None:
    with pytest.raises(AllowlistEditError, match="needs a device"):
        move_entry(ALLOWLIST, "org2/repo2", Level.L3)


PINNED = """\
L3:
  xpu:
    org/pinned:   # the pins bind its tokens
      oncalls: [a]   # primary
      # the workflow that reports
      workflow: "org/pinned/.github/workflows/crcr.yml@*"
      repository_id: 42
      ref: refs/heads/main
L4:
  - org/other
"""


def test_a_pinned_entry_moves_with_every_pin_and_comment() -> None:
    """SPEC §10.2 invariant 3: nothing of the entry changes but its position."""
    edited = move_entry(PINNED, "org/pinned", Level.L2)
    assert edited == (
        "L2:\n"
        "  - org/pinned:   # the pins bind its tokens\n"
        "      oncalls: [a]   # primary\n"
        "      # the workflow that reports\n"
        '      workflow: "org/pinned/.github/workflows/crcr.yml@*"\n'
        "      repository_id: 42\n"
        "      ref: refs/heads/main\n"
        "L3:\n  xpu:\nL4:\n  - org/other\n"
    )
    before, after = parse_allowlist(PINNED), parse_allowlist(edited)
    assert after.entry("org/pinned") == replace(
        before.entry("org/pinned"), level=Level.L2, device=None
    )


@pytest.mark.parametrize("pin", ["repository_id: 42", "ref: refs/heads/main", "oncalls: [a]"])
def test_the_check_refuses_an_edit_that_lost_anything_of_the_entry(pin: str) -> None:
    """The re-parse compares whole entries: a dropped pin or oncall cannot pass."""
    edited = move_entry(PINNED, "org/pinned", Level.L2)
    lost = "".join(line for line in edited.splitlines(keepends=True) if pin not in line)
    with pytest.raises(AllowlistEditError, match="expected"):
        verify_move(PINNED, lost, "org/pinned", Level.L2, None)


def test_an_entry_already_at_its_target_changes_nothing() -> None:
    assert move_entry(ALLOWLIST, "org2/repo2", Level.L2) == ALLOWLIST


def test_the_check_refuses_an_edit_that_touched_another_entry() -> None:
    edited = move_entry(ALLOWLIST, "org3/xpu-backend", Level.L2).replace("  - org4/second\n", "")
    with pytest.raises(AllowlistEditError, match="other entries"):
        verify_move(ALLOWLIST, edited, "org3/xpu-backend", Level.L2, None)
    with pytest.raises(AllowlistEditError, match="expected"):
        verify_move(ALLOWLIST, ALLOWLIST, "org3/xpu-backend", Level.L2, None)
