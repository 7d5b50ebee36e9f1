"""Secret settings read from files: `CRCR_<NAME>_FILE` (SPEC §2).

Container secrets (`/run/secrets/…`) and systemd credentials (`$CREDENTIALS_DIRECTORY`)
hand a process a file, not an environment variable, so that the secret does not show in
`/proc/<pid>/environ` or `docker inspect`. Each secret setting may name such a file
instead; the file is read once, at start-up. Setting both forms is refused: which one
wins would be a guess, and a stale secret in force is worse than a clear error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import PydanticBaseSettingsSource

SECRET_SETTINGS = (
    "webhook_secret",
    "hud_token",
    "github_app_private_key",
    "redis_url",
    "database_url",
    "alert_webhook",
    "alert_secret",
    "alert_slack_url",
)
"""The settings that may come from a file (URLs carry passwords)."""


class SecretFileError(ValueError):
    """A `_FILE` variable cannot be used; the message names the variables."""


def read_secret_files(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The secret settings given as files in `environ`, read; keyed by field name."""
    values: dict[str, str] = {}
    for name in SECRET_SETTINGS:
        variable = f"CRCR_{name.upper()}"
        path = environ.get(f"{variable}_FILE")
        if not path:
            continue
        if environ.get(variable):
            raise SecretFileError(
                f"{variable} and {variable}_FILE are both set; set only one of them"
            )
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise SecretFileError(f"{variable}_FILE: cannot read {path}: {reason}") from None
        # Files written by `echo` or an editor end in a newline that is not the secret's.
        values[name] = text.rstrip("\r\n")
    return values


class SecretFilesSource(PydanticBaseSettingsSource):
    """A pydantic-settings source for the `_FILE` forms, below the environment."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Unused: `__call__` reads every secret file at once."""
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(read_secret_files(os.environ))
