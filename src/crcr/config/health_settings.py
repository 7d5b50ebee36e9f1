"""The SPEC §13 settings: the canary, freshness and alerts on transitions.

Kept beside `settings.py` (which inherits them) so each stays readable in one sitting;
nothing here reads the environment itself.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings

_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")


class HealthSettings(BaseSettings):
    """`CRCR_CANARY_*`, `CRCR_STALE_HOURS` and `CRCR_ALERT_*` (SPEC §13 "Shapes and units")."""

    canary_repo: str | None = None
    canary_interval: float = Field(default=3600, ge=0)  # seconds; 0 = no crcr_probe
    canary_deadline: float = Field(default=1800, gt=0)  # seconds
    stale_hours: float = Field(default=48, gt=0)
    alert_after: int = Field(default=3, ge=1)
    alert_webhook: SecretStr | None = None  # a URL may carry a token: never printed
    alert_secret: SecretStr | None = None
    alert_slack_url: SecretStr | None = None
    alert_issues: bool = False  # one upstream issue per failing backend, closed on recovery

    @field_validator("canary_repo")
    @classmethod
    def _canary_owner_repo(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not _REPO.match(value):
            raise ValueError("must be of the form owner/repo")
        return value

    @field_validator("alert_webhook", "alert_slack_url", mode="before")
    @classmethod
    def _https_sink(cls, value: Any) -> Any:
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str) or not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value

    @field_validator("alert_secret", mode="before")
    @classmethod
    def _empty_secret_is_unset(cls, value: Any) -> Any:
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @property
    def stale_seconds(self) -> float:
        """`CRCR_STALE_HOURS` in seconds."""
        return self.stale_hours * 3600.0
