"""Every secret setting may come from a file, `CRCR_<NAME>_FILE`, read at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from crcr.config.secret_files import SECRET_SETTINGS
from crcr.config.settings import SettingsError, load_settings

VALUES = {
    "webhook_secret": "whsec-from-file",
    "hud_token": "hud-from-file",
    "github_app_private_key": "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----",
    "redis_url": "redis://default:pw-from-file@cache:6379/0",
    "database_url": "postgresql://crcr:pw-from-file@db/hud",
    "alert_webhook": "https://alerts.example.org/hook?token=from-file",
    "alert_secret": "alert-secret-from-file",
    "alert_slack_url": "https://hooks.slack.com/services/T0/B0/from-file",
}


def test_every_secret_of_the_spec_has_a_file_form() -> None:
    assert set(SECRET_SETTINGS) == set(VALUES)


@pytest.mark.parametrize("name", SECRET_SETTINGS)
def test_a_secret_is_read_from_its_file_without_the_trailing_newline(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / name
    secret.write_text(VALUES[name] + "\n")
    monkeypatch.setenv(f"CRCR_{name.upper()}_FILE", str(secret))

    value = getattr(load_settings(), name)

    shown = value.get_secret_value() if hasattr(value, "get_secret_value") else value
    assert shown == VALUES[name]


@pytest.mark.parametrize("name", SECRET_SETTINGS)
def test_both_forms_set_is_an_error_naming_both(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / name
    secret.write_text(VALUES[name])
    variable = f"CRCR_{name.upper()}"
    monkeypatch.setenv(f"{variable}_FILE", str(secret))
    monkeypatch.setenv(variable, VALUES[name])

    with pytest.raises(SettingsError) as raised:
        load_settings()

    message = str(raised.value)
    assert f"{variable} and {variable}_FILE" in message
    assert VALUES[name] not in message


def test_an_unreadable_file_names_the_variable_and_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("CRCR_HUD_TOKEN_FILE", str(missing))

    with pytest.raises(SettingsError, match=f"CRCR_HUD_TOKEN_FILE: cannot read {missing}"):
        load_settings()


def test_an_empty_file_leaves_the_secret_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    monkeypatch.setenv("CRCR_HUD_TOKEN_FILE", str(empty))

    assert load_settings().hud_token is None
