"""Typed, frozen settings read once from the `CRCR_*` environment (SPEC §2).

Nothing else in crcr reads `os.environ` for configuration: components receive a
`Settings` object. Secrets are `SecretStr` so that they print as `**********` in
tracebacks, reprs and logs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"


class SettingsError(Exception):
    """A setting is missing or malformed; the message names the variable."""


class BuildkitePipeline(BaseModel):
    """A Buildkite pipeline's downstream repo and the claims its tokens must carry."""

    repo: str
    required_claims: dict[str, str] = Field(default_factory=dict)


class OidcIssuer(BaseModel):
    """One trusted OIDC issuer (SPEC §2, `CRCR_OIDC_ISSUERS`)."""

    issuer: str
    kind: Literal["github", "buildkite"] = "github"
    jwks_url: str | None = None
    repo_map: dict[str, BuildkitePipeline] = Field(default_factory=dict)

    @field_validator("repo_map", mode="before")
    @classmethod
    def _expand_short_entries(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"repo": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @property
    def jwks_endpoint(self) -> str:
        """The JWKS URL, defaulting to GitHub's convention under the issuer."""
        return self.jwks_url or self.issuer.rstrip("/") + "/.well-known/jwks"


def _default_issuers() -> list[OidcIssuer]:
    return [OidcIssuer(issuer=GITHUB_ACTIONS_ISSUER, kind="github")]


class Settings(BaseSettings):
    """Every `CRCR_*` setting of SPEC §2, validated at start-up."""

    model_config = SettingsConfigDict(env_prefix="CRCR_", frozen=True, extra="ignore")

    upstream_repo: str = "pytorch/pytorch"
    webhook_secret: SecretStr | None = None
    github_app_id: str | None = None
    github_app_private_key: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    allowlist: str | None = None
    allowlist_ttl: int = Field(default=900, ge=0)
    oidc_audience: str = "pytorch-cross-repo-ci-relay"
    oidc_issuers: Annotated[list[OidcIssuer], NoDecode] = Field(default_factory=_default_issuers)
    redis_url: str | None = None
    data_dir: Path = Path("./crcr-data")
    database_url: str | None = None
    hud_url: str | None = None
    hud_token: SecretStr | None = None
    rate_limit_per_min: int = Field(default=100, ge=1)
    status_ttl: int = Field(default=259200, ge=60)
    zombie_timeout: int = Field(default=21600, ge=1)
    push_branches: Annotated[list[str], NoDecode] = Field(default_factory=list)
    dispatch_concurrency: int = Field(default=100, ge=1)
    github_timeout: float = Field(default=10.0, gt=0)
    hud_timeout: float = Field(default=5.0, gt=0)
    hud_retention_days: int = Field(default=90, ge=1)

    @field_validator("upstream_repo")
    @classmethod
    def _owner_slash_repo(cls, value: str) -> str:
        owner, sep, name = value.partition("/")
        if not (owner and sep and name) or "/" in name:
            raise ValueError("must be of the form owner/repo")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis:// or rediss:// URL")
        return value or None

    @field_validator("github_api_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("push_branches", mode="before")
    @classmethod
    def _split_branches(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("oidc_issuers", mode="before")
    @classmethod
    def _load_issuers(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text.startswith(("[", "{")):
            path = Path(text)
            if not path.is_file():
                raise ValueError(f"is neither JSON nor a readable file: {text!r}")
            text = path.read_text()
            if path.suffix in (".yaml", ".yml"):
                import yaml

                return yaml.safe_load(text)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"is not valid JSON ({exc.msg})") from exc

    @property
    def hud_database_url(self) -> str:
        """The results store URL: `CRCR_DATABASE_URL` or SQLite in the data dir."""
        return self.database_url or f"sqlite:///{self.data_dir / 'hud.db'}"

    @property
    def state_database_path(self) -> Path:
        """Where the embedded SQLite state store lives when no Redis URL is set."""
        return self.data_dir / "state.db"

    def private_key_pem(self) -> str | None:
        """The App key as PEM text; the setting may hold the PEM or a path to it."""
        if self.github_app_private_key is None:
            return None
        raw = self.github_app_private_key.get_secret_value()
        if "-----BEGIN" in raw:
            return raw.replace("\\n", "\n")
        return Path(raw).expanduser().read_text()

    def missing_for_serving(self) -> list[str]:
        """Names of the variables `crcr serve` needs but does not have."""
        required = {
            "CRCR_WEBHOOK_SECRET": self.webhook_secret,
            "CRCR_GITHUB_APP_ID": self.github_app_id,
            "CRCR_GITHUB_APP_PRIVATE_KEY": self.github_app_private_key,
            "CRCR_ALLOWLIST": self.allowlist,
        }
        return [name for name, value in required.items() if not value]


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment, turning validation errors into one line."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "?"
        message = first["msg"].removeprefix("Value error, ")
        problems = len(exc.errors())
        more = f" (and {problems - 1} more)" if problems > 1 else ""
        raise SettingsError(f"CRCR_{field.upper()}: {message}{more}") from None
