"""Which of the App's installations covers a repository, from one listing of them all."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from crcr.github.http import AuthProvider, GitHubHttp

INSTALLATIONS_TTL = 300.0
"""How long the App's list of installations is trusted before it is listed again."""

MAX_PAGES = 50


class AppInstallations:
    """Installation ids by owner, listed once per `INSTALLATIONS_TTL` with the App's JWT.

    An App has one installation per account, so one listing of the App's installations
    answers for every repo of every owner: a cold fan-out to 100 repos of 10 owners
    costs one call here instead of 100. `repo_path` checks and spells a repo's path.
    """

    def __init__(
        self,
        http: GitHubHttp,
        app_auth: AuthProvider,
        repo_path: Callable[[str], str],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._http = http
        self._app_auth = app_auth
        self._repo_path = repo_path
        self._clock = clock
        self._accounts: dict[str, int] = {}
        self._fresh_until = 0.0
        self._lock = asyncio.Lock()

    async def lookup(self, repo: str) -> int:
        """The installation of the repo's owner, else GitHub's answer for the repo itself."""
        owner = repo.partition("/")[0].lower()
        accounts = await self._listed()
        if owner in accounts:
            return accounts[owner]
        response = await self._http.request(
            "GET", f"{self._repo_path(repo)}/installation", auth=self._app_auth
        )
        return int(response.json()["id"])

    async def _listed(self) -> dict[str, int]:
        """Account login → installation id, listed once per `INSTALLATIONS_TTL`."""
        async with self._lock:
            if self._clock() >= self._fresh_until:
                accounts: dict[str, int] = {}
                url, params = "/app/installations", {"per_page": "100"}
                for _ in range(MAX_PAGES):
                    response = await self._http.request(
                        "GET", url, auth=self._app_auth, params=params
                    )
                    for installation in response.json():
                        # GitHub documents `account` as nullable, or an Enterprise (a
                        # `slug`, no `login`): neither owns repositories to look up.
                        account = installation.get("account") or {}
                        if isinstance(account.get("login"), str):
                            accounts[account["login"].lower()] = int(installation["id"])
                    url, params = response.links.get("next", {}).get("url", ""), {}
                    if not url:
                        break
                self._accounts = accounts
                self._fresh_until = self._clock() + INSTALLATIONS_TTL
            return self._accounts
