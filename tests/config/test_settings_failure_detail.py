"""`CRCR_HUD_PUBLIC_URL` and `CRCR_L4_CONFIRM_RERUN` (SPEC §2, §11), checked at start-up."""

from __future__ import annotations

import pytest

from crcr.config.settings import SettingsError, load_settings


def test_by_default_l4_failures_are_re_run_once_and_check_runs_link_no_hud() -> None:
    settings = load_settings()
    assert settings.l4_confirm_rerun == 1
    assert settings.hud_public_url is None


def test_the_hud_address_loses_its_trailing_slash() -> None:
    settings = load_settings(hud_public_url="https://hud.example.org/")
    assert settings.hud_public_url == "https://hud.example.org"


@pytest.mark.parametrize(
    ("overrides", "variable"),
    [
        ({"hud_public_url": "hud.example.org"}, "CRCR_HUD_PUBLIC_URL"),
        ({"hud_public_url": "javascript:alert(1)"}, "CRCR_HUD_PUBLIC_URL"),
        ({"l4_confirm_rerun": 2}, "CRCR_L4_CONFIRM_RERUN"),
        ({"l4_confirm_rerun": "often"}, "CRCR_L4_CONFIRM_RERUN"),
    ],
)
def test_a_bad_value_names_the_variable(overrides: dict[str, object], variable: str) -> None:
    with pytest.raises(SettingsError, match=variable):
        load_settings(**overrides)


def test_zero_turns_the_re_run_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRCR_L4_CONFIRM_RERUN", "0")
    assert load_settings().l4_confirm_rerun == 0
