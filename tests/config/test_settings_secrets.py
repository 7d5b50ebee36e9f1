"""Secrets in settings: an empty one is unset, and a password in a URL never prints."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from crcr.app import create_app_from_environment
from crcr.config.settings import SettingsError, load_settings, mask_url
from crcr.hud.component import create_hud_app


@pytest.mark.parametrize("name", ["webhook_secret", "hud_token", "github_app_private_key"])
@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_secret_is_unset(name: str, empty: str) -> None:
    assert getattr(load_settings(**{name: empty}), name) is None


def test_an_empty_secret_from_the_environment_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRCR_HUD_TOKEN", "")

    assert load_settings().hud_token is None


async def test_an_empty_hud_token_lets_no_empty_header_in(tmp_path: Path) -> None:
    app = create_hud_app(load_settings(hud_token="", data_dir=tmp_path))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hud") as client:
            response = await client.post(
                "/api/crcr/results", content=b"{}", headers={"x-hud-internal-bot": ""}
            )

    assert response.status_code == 401


def test_the_uvicorn_factory_refuses_an_empty_webhook_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CRCR_WEBHOOK_SECRET", "")
    monkeypatch.setenv("CRCR_GITHUB_APP_ID", "1")
    monkeypatch.setenv("CRCR_GITHUB_APP_PRIVATE_KEY", "-----BEGIN KEY-----")
    monkeypatch.setenv("CRCR_ALLOWLIST", str(tmp_path / "allowlist.yml"))

    with pytest.raises(SettingsError, match="CRCR_WEBHOOK_SECRET"):
        create_app_from_environment()


def test_passwords_in_urls_never_show_in_repr_or_str() -> None:
    settings = load_settings(
        redis_url="redis://default:redis-pass@cache:6379/0",
        database_url="postgresql://crcr:pg-pass@db:5432/hud",
        hud_token="hud-token-value",
    )

    for shown in (repr(settings), str(settings)):
        assert "redis-pass" not in shown and "pg-pass" not in shown
        assert "hud-token-value" not in shown
        assert "redis://default:***@cache:6379/0" in shown
    assert settings.redis_url == "redis://default:redis-pass@cache:6379/0"  # still usable


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://u:p@h/db", "postgresql://u:***@h/db"),
        ("redis://:only-pass@h:6379", "redis://:***@h:6379"),
        ("https://h/path@x", "https://h/path@x"),
        ("redis://h:6379", "redis://h:6379"),
        ("https://user@h/", "https://user@h/"),
    ],
)
def test_mask_url_hides_only_the_password(url: str, masked: str) -> None:
    assert mask_url(url) == masked
