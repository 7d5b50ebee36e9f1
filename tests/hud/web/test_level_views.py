"""The levels page's shaping: verdict badges, criterion lines, the history timeline (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crcr.hud.levels.judge import CriterionResult, Verdict
from crcr.hud.levels.measure import LevelSpan
from crcr.hud.levels.providers import Demotion, Episode
from crcr.hud.levels.status import BackendLevel, LevelReport
from crcr.hud.web.level_views import (
    criterion_line,
    episode_bars,
    level_rows,
    timeline,
    verdict_badges,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def backend(repo: str, level: str, change: str | None, no_data: bool = False) -> BackendLevel:
    return BackendLevel(repo, level, Verdict(change, no_data, 7, ()), ())


def test_each_verdict_gets_a_word_and_a_tone() -> None:
    report = LevelReport(
        NOW,
        (
            backend("a/demoted", "L3", "demote"),
            backend("a/ready", "L2", "promote"),
            backend("a/waiting", "L2", None),
            backend("a/fine", "L4", None),
            backend("a/quiet", "L3", None, no_data=True),
            backend("a/dispatch", "L1", None, no_data=True),
        ),
        {"A/Demoted": Demotion(NOW, None)},
    )

    badges = verdict_badges(report)

    assert {repo: (b.word, b.tone) for repo, (b, _) in badges.items()} == {
        "a/demoted": ("demote", "bad"),
        "a/ready": ("ready for L3", "good"),
        "a/waiting": ("not ready", "muted"),
        "a/fine": ("healthy", "good"),
        "a/quiet": ("no data", "muted"),
        "a/dispatch": ("not judged", "muted"),
    }
    assert badges["a/demoted"][1] == Demotion(NOW, None), "repos compare without case"
    assert [row.repo for row in level_rows(report)] == [
        "a/fine",
        "a/demoted",
        "a/quiet",
        "a/ready",
        "a/waiting",
        "a/dispatch",
    ]


def test_criteria_show_in_their_units() -> None:
    lines = [
        criterion_line(CriterionResult("job_pass_rate", 89.9, "≥ 90%", False)),
        criterion_line(CriterionResult("e2e_p50_hours", 2.5, "< 3 h", True)),
        criterion_line(CriterionResult("avg_queue_minutes", None, "< 30 min", None)),
        criterion_line(CriterionResult("days_at_l2", 31.0, "≥ 30 days", True)),
    ]

    assert [(line.label, line.measured) for line in lines] == [
        ("Job pass rate", "89.9%"),
        ("End-to-end time, P50", "2.5 h"),
        ("Average queue time", "—"),
        ("Time at L2", "31 days"),
    ]


def test_the_noise_floor_shows_as_a_percentage_of_pairs_for_information() -> None:
    line = criterion_line(CriterionResult("noise_rate", 0.125, "information (8 A/A pairs)", None))

    assert (line.label, line.measured, line.target, line.met) == (
        "Noise floor (A/A pairs that disagree)",
        "12.5%",
        "information (8 A/A pairs)",
        None,
    )


def test_the_timeline_spans_at_least_30_days_and_every_level_shows() -> None:
    spans = (
        LevelSpan("L2", NOW - timedelta(days=60), NOW - timedelta(days=30)),
        LevelSpan("L3", NOW - timedelta(days=30), NOW),
    )
    recent = (LevelSpan("L2", NOW - timedelta(hours=1), NOW - timedelta(hours=1)),)

    assert [(s.level, s.x, s.width) for s in timeline(spans, NOW)] == [
        ("L2", 0.0, 50.0),
        ("L3", 50.0, 50.0),
    ]
    [sliver] = timeline(recent, NOW)
    assert sliver.width == 1.0 and sliver.x + sliver.width <= 100
    assert timeline((), NOW) == ()


def test_episodes_are_bars_on_their_own_rows_up_to_the_latest_planned_end() -> None:
    day = timedelta(days=1)
    episodes = (
        Episode("level", NOW - 40 * day, None, "L3"),
        Episode("demotion", NOW - 10 * day, NOW - 5 * day, "L3 → L2"),
        Episode("decline", NOW - 5 * day, NOW + 2 * day, "declined by maintainer"),
    )

    bars = episode_bars(episodes, NOW)

    assert [(b.kind, b.lane, b.y) for b in bars] == [
        ("level", 0, 0),
        ("demotion", 1, 6),
        ("decline", 2, 12),
    ]
    level, demotion, decline = bars
    # The axis runs 42 days: from 40 days back to the decline's end, 2 days ahead.
    assert (level.x, level.width) == (0.0, round(100 * 40 / 42, 2))
    assert (demotion.x, demotion.width) == (round(100 * 30 / 42, 2), round(100 * 5 / 42, 2))
    assert decline.x + decline.width == 100.0
    assert episode_bars((), NOW) == ()
