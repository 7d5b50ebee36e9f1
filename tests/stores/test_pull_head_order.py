"""The rule that orders a pull request's heads (SPEC §15), alone: what each store's
atomic step decides when two pushes' fan-outs finish out of order."""

from __future__ import annotations

import pytest

from crcr.stores.pull_head_order import KEEP_SUPERSEDED, is_newer, remember
from crcr.stores.roles.pull_heads import NewHead

A, B, C = ("a" * 40, "b" * 40, "c" * 40)
EARLY, LATE = "2026-11-29T10:00:01Z", "2026-11-29T10:00:05Z"


def live(sha: str, updated_at: str = "") -> dict[str, str]:
    head = {"delivery_id": "live", "head_sha": sha}
    return {**head, "updated_at": updated_at} if updated_at else head


@pytest.mark.parametrize(
    ("new", "live_head", "superseded", "expected"),
    [
        # The chain: the new head moved from the live one.
        (NewHead("d", B, before=A), live(A), set(), True),
        (NewHead("d", B, before=A, updated_at=EARLY), live(A, LATE), set(), True),
        (NewHead("d", A, before=B), live(B), {A}, True),  # pushed back to an older commit
        # A newer head already named (or replaced) this one: it is the older.
        (NewHead("d", B, before=A), live(C), {A, B}, False),
        # The chain cannot tell: updated_at, when both carry one and they differ...
        (NewHead("d", B, before=C, updated_at=EARLY), live(A, LATE), set(), False),
        (NewHead("d", B, before=C, updated_at=LATE), live(A, EARLY), set(), True),
        # ... else arrival order: the later step wins.
        (NewHead("d", B, before=C, updated_at=LATE), live(A, LATE), set(), True),
        (NewHead("d", B), live(A), set(), True),
    ],
)
def test_which_of_two_heads_is_the_newer(
    new: NewHead, live_head: dict[str, str], superseded: set[str], expected: bool
) -> None:
    assert is_newer(new, live_head, superseded) is expected


def test_the_superseded_shas_keep_the_latest_and_forget_a_head_that_went_live() -> None:
    assert remember([A, B], [C, A], forget=B) == [C, A]
    many = [f"{n:040x}" for n in range(KEEP_SUPERSEDED)]
    assert remember(many, [C], forget="") == [*many[1:], C]
