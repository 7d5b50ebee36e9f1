"""Typed, frozen settings read once from the `CRCR_*` environment (SPEC §2).

Nothing else in crcr reads `os.environ` for configuration: components receive a
`Settings` object. Secrets are `SecretStr` so that they print as `**********` in
tracebacks, reprs and logs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from crcr.config.budget_settings import BudgetSettings
from crcr.config.config_text import load_json_or_file
from crcr.config.culprit_settings import CulpritSettings
from crcr.config.health_settings import HealthSettings
from crcr.config.level_criteria import LevelCriteria, level_criteria_from, parse_level_criteria
from crcr.config.logging_setup import LOG_FORMATS, LOG_LEVELS
from crcr.config.secret_files import SecretFileError, SecretFilesSource

GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"


class SettingsError(Exception):
    """A setting is missing or malformed; the message names the variable."""


class BuildkitePipeline(BaseModel):
    """A Buildkite pipeline's downstream repo and the claims its tokens must carry.

    A required claim's value is one string or, as the reference's `ci_providers.yml`
    writes it (`build_branch: [main]`), a list of which the token's claim must be one;
    both are kept as a tuple of the values accepted.
    """

    repo: str
    required_claims: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    @field_validator("required_claims", mode="before")
    @classmethod
    def _one_or_any_of(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("required_claims")
    @classmethod
    def _some_value_each(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for name, accepted in value.items():
            if not accepted or not all(accepted):
                raise ValueError(
                    f"required_claims.{name} must be a non-empty string or a non-empty list "
                    "of them (any of which the token's claim may be)"
                )
        return value


# Buildkite's organization_id and pipeline_id claims are UUIDs (canonical, lower case).
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_PIPELINE_KEY = re.compile(rf"{_UUID}/{_UUID}")


class OidcIssuer(BaseModel):
    """One trusted OIDC issuer (SPEC §2, `CRCR_OIDC_ISSUERS`)."""

    issuer: str
    kind: Literal["github", "buildkite"] = "github"
    jwks_url: str | None = None
    repo_map: dict[str, BuildkitePipeline] = Field(default_factory=dict)

    @field_validator("issuer")
    @classmethod
    def _exact_issuer(cls, value: str) -> str:
        # `iss` is compared exactly, and neither GitHub's nor Buildkite's ends in '/':
        # refused rather than rewritten, so the pinned value is the one the operator wrote.
        if value.endswith("/"):
            raise ValueError("issuer must not end with '/' (tokens' iss never does)")
        return value

    @field_validator("repo_map", mode="before")
    @classmethod
    def _expand_short_entries(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"repo": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("repo_map")
    @classmethod
    def _keys_are_ids(cls, value: dict[str, BuildkitePipeline]) -> dict[str, BuildkitePipeline]:
        # Slugs are renamable and shared by every organisation behind one issuer, so a
        # slug key would be a hole; refusing it at start-up beats a silent 401 later.
        for key in value:
            if not _PIPELINE_KEY.fullmatch(key.lower()):
                raise ValueError(
                    f"repo_map key {key!r} is not <organization_id>/<pipeline_id> "
                    "(Buildkite's UUIDs, not slugs)"
                )
        normalised = {key.lower(): pipeline for key, pipeline in value.items()}
        if len(normalised) != len(value):
            raise ValueError("repo_map lists the same pipeline twice (keys differ only in case)")
        return normalised

    @model_validator(mode="after")
    def _repo_map_fits_the_kind(self) -> OidcIssuer:
        if self.kind == "buildkite" and not self.repo_map:
            raise ValueError("a buildkite issuer needs a non-empty repo_map")
        if self.kind == "github" and self.repo_map:
            raise ValueError("repo_map is for buildkite issuers; a github token names its repo")
        return self

    @property
    def jwks_endpoint(self) -> str:
        """The JWKS URL, defaulting to GitHub's convention under the issuer."""
        return self.jwks_url or self.issuer + "/.well-known/jwks"


def _default_issuers() -> list[OidcIssuer]:
    return [OidcIssuer(issuer=GITHUB_ACTIONS_ISSUER, kind="github")]


def _entry_name(index: int, entry: Any) -> str:
    issuer = entry.issuer if isinstance(entry, OidcIssuer) else None
    if isinstance(entry, dict) and isinstance(entry.get("issuer"), str):
        issuer = entry["issuer"]
    return f"entry {index} ({issuer})" if issuer else f"entry {index}"


def _validated_issuers(entries: Any) -> list[OidcIssuer]:
    """Validate each issuer, naming the entry in the error, then the list as a whole.

    Two github-kind issuers are refused: the `repository` claims of github.com and a
    GitHub Enterprise Server share one owner/repo namespace that the allowlist cannot
    tell apart (and dispatches go to a single GitHub API anyway).
    """
    if not isinstance(entries, list) or not entries:
        raise ValueError("must be a non-empty list of issuers")
    issuers = []
    for index, entry in enumerate(entries):
        try:
            issuers.append(OidcIssuer.model_validate(entry))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            detail = f"{where}: {message}" if where else message
            raise ValueError(f"{_entry_name(index, entry)}: {detail}") from None
    seen: dict[str, int] = {}
    for index, issuer in enumerate(issuers):
        if issuer.issuer in seen:
            raise ValueError(
                f"{_entry_name(index, issuer)}: duplicates entry {seen[issuer.issuer]}"
            )
        seen[issuer.issuer] = index
    github = [i for i, issuer in enumerate(issuers) if issuer.kind == "github"]
    if len(github) > 1:
        raise ValueError(
            f"{_entry_name(github[1], issuers[github[1]])}: only one github issuer is allowed "
            f"(entry {github[0]} is one); GitHub instances share the owner/repo namespace"
        )
    return issuers


class Settings(HealthSettings, CulpritSettings, BudgetSettings):
    """Every `CRCR_*` setting of SPEC §2 (§13, §14 and §15's inherited), checked at start-up."""

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
    redis_prefix: str = Field(default="crcr:", min_length=1, pattern=r"^[^{}]+$")
    redis_cluster: bool = False  # CRCR_REDIS_URL names any node of a Redis Cluster
    data_dir: Path = Path("./crcr-data")
    database_url: str | None = None
    hud_url: str | None = None
    hud_token: SecretStr | None = None
    hud_public_url: str | None = None
    l4_confirm_rerun: int = Field(default=1, ge=0, le=1)
    rate_limit_per_min: int = Field(default=100, ge=1)
    status_ttl: int = Field(default=259200, ge=60)
    zombie_timeout: int = Field(default=21600, ge=1)
    push_branches: Annotated[list[str], NoDecode] = Field(default_factory=list)
    dispatch_concurrency: int = Field(default=100, ge=1)
    github_timeout: float = Field(default=10.0, gt=0)
    hud_timeout: float = Field(default=5.0, gt=0)
    hud_retention_days: int = Field(default=90, ge=1)
    level_criteria: Annotated[LevelCriteria, NoDecode] = Field(default_factory=LevelCriteria)
    levels_sync_interval: int = Field(default=3600, ge=0)
    # SPEC §10.2: seconds a declined demotion (its pull request closed unmerged) keeps
    # new demotions and their pull requests away from that backend.
    demotion_snooze: int = Field(default=7 * 24 * 3600, ge=0)
    public_docs: bool = False
    self_report_lookups_per_hour: int = Field(default=60, ge=1)
    max_jobs_per_dispatch: int = Field(default=256, ge=1)
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    workers: int = Field(default=1, ge=1)
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    log_level: str = "info"
    log_format: str | None = None
    access_log: bool = True
    audit_days: int = Field(default=30, ge=1)
    audit_max_per_repo: int = Field(default=10000, ge=1)
    shutdown_grace: int = Field(default=30, ge=0)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The environment, then `CRCR_<SECRET>_FILE` (crcr.config.secret_files)."""
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            file_secret_settings,
            SecretFilesSource(settings_cls),
        )

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if value.lower() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return value.lower()

    @field_validator("log_format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        if not value:
            return None  # unset: text on a terminal, JSON otherwise
        if value.lower() not in LOG_FORMATS:
            raise ValueError(f"must be one of {', '.join(LOG_FORMATS)}")
        return value.lower()

    @property
    def docs_routes(self) -> dict[str, Any]:
        """`/openapi.json` only with `CRCR_PUBLIC_DOCS`; `/docs` is crcr.web.api_docs' own.

        They describe every route to anyone who asks; an operator opts in. FastAPI's
        `/docs` and `/redoc` load their scripts from CDNs, so neither is used.
        """
        closed = {} if self.public_docs else {"openapi_url": None}
        return {"docs_url": None, "redoc_url": None, **closed}

    @field_validator("webhook_secret", "github_app_private_key", "hud_token", mode="before")
    @classmethod
    def _empty_secret_is_unset(cls, value: Any) -> Any:
        # `CRCR_HUD_TOKEN=` must not make an empty header a valid token.
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str) and not value.strip():
            return None
        return value

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

    @field_validator("hud_public_url")
    @classmethod
    def _web_base(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL, the HUD's address as people reach it")
        return value.rstrip("/")

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
            return _validated_issuers(value)
        return _validated_issuers(load_json_or_file(value))

    @field_validator("level_criteria", mode="before")
    @classmethod
    def _load_level_criteria(cls, value: Any) -> LevelCriteria:
        if isinstance(value, str):
            return parse_level_criteria(value)
        return level_criteria_from(value)

    def __repr_args__(self) -> Any:
        # A password in a URL is a secret too: masked in repr(), str() and tracebacks.
        for name, value in super().__repr_args__():
            yield name, mask_url(value) if isinstance(value, str) and "://" in value else value

    @property
    def hud_database_url(self) -> str:
        """The results store URL: `CRCR_DATABASE_URL` or SQLite in the data dir."""
        return self.database_url or f"sqlite:///{self.data_dir / 'hud.db'}"

    @property
    def state_database_path(self) -> Path:
        """Where the embedded SQLite state store lives when no Redis URL is set."""
        return self.data_dir / "state.db"

    @property
    def allows_plain_http(self) -> bool:
        """Whether `http://` links are accepted: only where GitHub itself is (the sandbox)."""
        return self.github_api_url.startswith("http://")

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


def mask_url(url: str) -> str:
    """`url` with the password of its userinfo (`user:password@`) replaced by `***`."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not (sep and at) or ":" not in userinfo:
        return url
    user = userinfo.partition(":")[0]
    return f"{scheme}://{user}:***@{host}{slash}{path}"


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment, turning validation errors into one line."""
    try:
        return Settings(**overrides)
    except SecretFileError as exc:
        raise SettingsError(str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "?"
        message = first["msg"].removeprefix("Value error, ")
        problems = len(exc.errors())
        more = f" (and {problems - 1} more)" if problems > 1 else ""
        raise SettingsError(f"CRCR_{field.upper()}: {message}{more}") from None
