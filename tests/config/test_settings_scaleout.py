"""The scale-out settings: a bad value stops start-up with one line naming the variable."""

from __future__ import annotations

import pytest

from crcr.config.settings import SettingsError, load_settings


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CRCR_REDIS_PREFIX", "crcr:{tenant}:"),
        ("CRCR_REDIS_PREFIX", ""),
        ("CRCR_SHUTDOWN_GRACE", "-1"),
    ],
)
def test_a_bad_value_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)

    with pytest.raises(SettingsError) as refused:
        load_settings()

    assert variable in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_defaults_share_redis_under_crcr_and_give_half_a_minute_of_grace() -> None:
    settings = load_settings()

    assert (settings.redis_prefix, settings.shutdown_grace) == ("crcr:", 30)
