"""The client is built from settings, and a missing App identity is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from crcr.config.settings import SettingsError, load_settings
from crcr.github.factory import github_client_from_settings
from crcr.sandbox.github_identity import SandboxApp


async def test_a_key_file_path_and_an_enterprise_url_make_a_client(
    app_identity: SandboxApp, tmp_path: Path
) -> None:
    key_path = app_identity.write_private_key(tmp_path / "app.pem")
    settings = load_settings(
        github_app_id="31337",
        github_app_private_key=str(key_path),
        github_api_url="https://ghe.example.org/api/v3/",
        github_timeout=3.5,
    )

    client = github_client_from_settings(settings, None)

    assert client.api_url == "https://ghe.example.org/api/v3"
    assert client.app_jwt.app_id == "31337"
    await client.aclose()


def test_a_missing_app_id_is_named() -> None:
    settings = load_settings(github_app_id=None, github_app_private_key="x")

    with pytest.raises(SettingsError, match="CRCR_GITHUB_APP_ID"):
        github_client_from_settings(settings, None)


def test_an_unreadable_key_file_is_named_without_its_content(tmp_path: Path) -> None:
    settings = load_settings(
        github_app_id="1", github_app_private_key=str(tmp_path / "missing.pem")
    )

    with pytest.raises(SettingsError, match="CRCR_GITHUB_APP_PRIVATE_KEY: cannot read"):
        github_client_from_settings(settings, None)
