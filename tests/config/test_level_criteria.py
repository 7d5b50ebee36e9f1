"""CRCR_LEVEL_CRITERIA: SPEC §10's table by default, overrides by key, errors naming the key."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from crcr.config.level_criteria import CRITERIA, LevelCriteria, parse_level_criteria
from crcr.config.settings import SettingsError, load_settings


def test_the_defaults_are_spec_10s_table() -> None:
    criteria = load_settings().level_criteria

    assert (criteria.demotion_window_days, criteria.promotion_window_days) == (7, 14)
    assert [criteria.target(name) for name in CRITERIA] == [
        "≥ 90%",
        "< 1%",
        "< 3 h",
        "< 1%",
        "< 30 min",
        "≥ 30 days",
    ]
    assert criteria.demotion_criteria == ("job_pass_rate", "timeout_rate", "e2e_p50_hours")
    assert criteria.promotion_criteria == CRITERIA


def test_floors_are_met_at_the_threshold_and_ceilings_only_below_it() -> None:
    criteria = LevelCriteria()

    assert criteria.met("job_pass_rate", Fraction(90)) is True
    assert criteria.met("job_pass_rate", Fraction(899, 10)) is False
    assert criteria.met("timeout_rate", Fraction(1)) is False
    assert criteria.met("timeout_rate", Fraction(99, 100)) is True
    assert criteria.met("e2e_p50_hours", Fraction(3)) is False
    assert criteria.met("days_at_l2", Fraction(30)) is True


def test_json_text_overrides_only_the_keys_it_names() -> None:
    criteria = parse_level_criteria('{"job_pass_rate": 95.5, "demotion_window_days": 3}')

    assert criteria.job_pass_rate == Decimal("95.5")
    assert criteria.target("job_pass_rate") == "≥ 95.5%"
    assert criteria.demotion_window_days == 3
    assert criteria.timeout_rate == Decimal(1)


def test_a_yaml_or_json_file_path_is_read(tmp_path: Path) -> None:
    yaml_file = tmp_path / "criteria.yaml"
    yaml_file.write_text("e2e_p50_hours: 2.5\npromotion_criteria: [job_pass_rate, days_at_l2]\n")
    json_file = tmp_path / "criteria.json"
    json_file.write_text(json.dumps({"avg_queue_minutes": 15}))

    from_yaml = parse_level_criteria(str(yaml_file))
    assert from_yaml.target("e2e_p50_hours") == "< 2.5 h"
    assert from_yaml.promotion_criteria == ("job_pass_rate", "days_at_l2")
    assert parse_level_criteria(str(json_file)).target("avg_queue_minutes") == "< 15 min"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"job_pass_rate": "high"}', "key 'job_pass_rate': must be a number"),
        ('{"timeout_rate": 101}', "key 'timeout_rate': is a percentage"),
        ('{"e2e_p50_hours": -1}', "key 'e2e_p50_hours': must be a finite number ≥ 0"),
        ('{"demotion_window_days": 0}', "key 'demotion_window_days': must be a whole number"),
        ('{"promotion_criteria": ["speed"]}', "key 'promotion_criteria': unknown criterion"),
        ('{"pass_rate": 90}', "unknown key 'pass_rate'"),
        ("{not json", "is not valid JSON"),
        ("/no/such/criteria.yaml", "is neither JSON nor a readable file"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable_and_the_key(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("CRCR_LEVEL_CRITERIA", value)

    with pytest.raises(SettingsError) as raised:
        load_settings()

    assert str(raised.value).startswith("CRCR_LEVEL_CRITERIA: ")
    assert message in str(raised.value)
