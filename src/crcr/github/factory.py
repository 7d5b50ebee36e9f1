"""Build the GitHub client from settings (the one place that knows which settings it needs)."""

from __future__ import annotations

from crcr.config.settings import Settings, SettingsError
from crcr.github.client import GitHubClient
from crcr.stores.roles import Caches


def github_client_from_settings(settings: Settings, store: Caches | None) -> GitHubClient:
    """A client for the configured App; `SettingsError` naming the variable when incomplete."""
    if not settings.github_app_id:
        raise SettingsError("CRCR_GITHUB_APP_ID: required to call GitHub")
    try:
        pem = settings.private_key_pem()
    except OSError as exc:
        raise SettingsError(
            f"CRCR_GITHUB_APP_PRIVATE_KEY: cannot read the key file ({exc.strerror})"
        ) from None
    if not pem:
        raise SettingsError("CRCR_GITHUB_APP_PRIVATE_KEY: required to call GitHub")
    return GitHubClient(
        settings.github_api_url,
        settings.github_app_id,
        pem,
        store,
        timeout=settings.github_timeout,
    )
