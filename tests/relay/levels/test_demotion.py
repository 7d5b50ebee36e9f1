"""What a temporary demotion does to a job, and when one starts and ends (SPEC §10.1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crcr.relay.allowlist.model import Level, parse_allowlist
from crcr.relay.levels.demotion import Demotion, level_for_job, plan_demotions
from crcr.relay.levels.status import BackendStatus

SINCE = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
ALLOWLIST = parse_allowlist("L2:\n  - o/two\nL3:\n  xpu:\n    o/three: []\nL4:\n  - o/four\n")


def status(repo: str, level: Level, change: str | None, *, no_data: bool = False) -> BackendStatus:
    return BackendStatus(repo, level, change, no_data, 7, ())


def test_a_job_that_started_before_the_demotion_finishes_at_its_level() -> None:
    demotion = Demotion("o/three", SINCE, Level.L3)
    before = (SINCE - timedelta(seconds=1)).timestamp()
    assert level_for_job(Level.L3, before, demotion) == Level.L3
    assert level_for_job(Level.L3, SINCE.timestamp(), demotion) == Level.L2
    assert level_for_job(Level.L3, None, demotion) == Level.L2
    assert level_for_job(Level.L4, SINCE.timestamp(), Demotion("o/four", SINCE, Level.L4)) == (
        Level.L3
    )


def test_a_job_recorded_at_another_level_keeps_it() -> None:
    demotion = Demotion("o/three", SINCE, Level.L3)
    assert level_for_job(Level.L2, SINCE.timestamp() + 5, demotion) == Level.L2
    assert level_for_job(Level.L3, SINCE.timestamp() + 5, None) == Level.L3


def test_a_demotion_survives_the_round_trip_through_the_store() -> None:
    demotion = Demotion("O/Three", SINCE, Level.L4, "https://github.com/o/u/pull/3")
    assert Demotion.from_store("o/three", demotion.to_store()) == demotion


def test_a_demote_verdict_starts_a_demotion_at_the_allowlist_level() -> None:
    statuses = {
        "o/three": status("o/three", Level.L3, "demote"),
        "o/four": status("o/four", Level.L4, None),
        "o/two": status("o/two", Level.L2, "promote"),
    }
    plan = plan_demotions(statuses, ALLOWLIST, {}, SINCE)
    assert plan.start == (Demotion("o/three", SINCE, Level.L3),)
    assert plan.end == ()


def test_a_demotion_in_force_is_not_started_again() -> None:
    current = {"o/three": Demotion("o/three", SINCE, Level.L3)}
    statuses = {"o/three": status("o/three", Level.L3, "demote")}
    later = SINCE + timedelta(hours=1)
    assert plan_demotions(statuses, ALLOWLIST, current, later).start == ()


def test_recovery_with_data_ends_it_but_a_window_without_data_does_not() -> None:
    current = {"o/three": Demotion("o/three", SINCE, Level.L3)}
    recovered = {"o/three": status("o/three", Level.L3, None)}
    silent = {"o/three": status("o/three", Level.L3, None, no_data=True)}
    assert plan_demotions(recovered, ALLOWLIST, current, SINCE).end == ("o/three",)
    assert plan_demotions(silent, ALLOWLIST, current, SINCE).end == ()
    assert plan_demotions({}, ALLOWLIST, current, SINCE).end == ()


def test_an_allowlist_change_ends_it() -> None:
    current = {"o/three": Demotion("o/three", SINCE, Level.L3)}
    merged = parse_allowlist("L2:\n  - o/two\n  - o/three\n")
    statuses = {"o/three": status("o/three", Level.L2, "demote")}
    assert plan_demotions(statuses, merged, current, SINCE).end == ("o/three",)
    assert plan_demotions(statuses, merged, {}, SINCE).start == ()
