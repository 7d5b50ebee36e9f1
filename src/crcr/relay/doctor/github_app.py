"""The two App-authenticated questions the doctor asks GitHub: is the App installed on a
repository (`GET /repos/{owner}/{repo}/installation`), and what is the App's slug
(`GET /app`), which makes its install link `https://github.com/apps/<slug>/installations/new`.
"""

from __future__ import annotations

from typing import Any

import httpx

from crcr.config.settings import Settings, SettingsError
from crcr.github.app_jwt import AppJwtSigner
from crcr.github.client import repo_path
from crcr.github.errors import GitHubNotFound
from crcr.github.http import GitHubHttp
from crcr.github.retry import RetryPolicy


class AppLookups:
    """Calls authenticated as the App itself (its JWT), not as an installation."""

    def __init__(
        self,
        api_url: str,
        app_id: str,
        private_key_pem: str,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._jwt = AppJwtSigner(app_id, private_key_pem)
        policy = RetryPolicy(max_retries=1)
        self._http = GitHubHttp(api_url, timeout=timeout, policy=policy, transport=transport)

    @classmethod
    def from_settings(cls, settings: Settings) -> AppLookups:
        """The configured App; `SettingsError` naming the variable when it is incomplete."""
        if not settings.github_app_id:
            raise SettingsError("CRCR_GITHUB_APP_ID: required to ask GitHub about the App")
        pem = settings.private_key_pem()
        if not pem:
            raise SettingsError("CRCR_GITHUB_APP_PRIVATE_KEY: required to ask GitHub")
        return cls(
            settings.github_api_url,
            settings.github_app_id,
            pem,
            timeout=settings.github_timeout,
        )

    async def _auth(self) -> str:
        return f"Bearer {self._jwt.token()}"

    async def slug(self) -> str:
        """The App's slug (`GET /app`)."""
        app: dict[str, Any] = (await self._http.request("GET", "/app", auth=self._auth)).json()
        return str(app["slug"])

    async def installation(self, repo: str) -> dict[str, Any] | None:
        """The App's installation on `repo`, or None where it is not installed (404)."""
        try:
            response = await self._http.request(
                "GET", f"{repo_path(repo)}/installation", auth=self._auth
            )
        except GitHubNotFound:
            return None
        found: dict[str, Any] = response.json()
        return found

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()
