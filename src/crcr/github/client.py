"""`GitHubClient`: the GitHub App calls the relay makes, authenticated and cached."""

from __future__ import annotations

import asyncio
import base64
import enum
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from crcr.github.app_jwt import AppJwtSigner
from crcr.github.errors import (
    GitHubError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubUnprocessable,
)
from crcr.github.http import AuthProvider, AuthRefresh, GitHubHttp
from crcr.github.installations import MAX_PAGES, AppInstallations
from crcr.github.retry import RetryPolicy
from crcr.github.tokens import InstallationToken, InstallationTokens
from crcr.stores.roles import Caches
from crcr.web.retry_policy import FULL_JITTER, Backoff

REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class RerunOutcome(enum.Enum):
    """What GitHub did with a re-run request."""

    STARTED = "started"
    ALREADY_RUNNING = "already_running"


def repo_path(repo: str) -> str:
    """`/repos/owner/name`, refusing anything that is not a plain `owner/name`."""
    if not REPO_NAME.match(repo) or any(part in (".", "..") for part in repo.split("/")):
        raise ValueError(f"repo must be 'owner/name', got {repo!r}")
    return f"/repos/{repo}"


def _epoch(iso_timestamp: str) -> float:
    return datetime.fromisoformat(iso_timestamp.replace("Z", "+00:00")).timestamp()


def encode_dispatch(event_type: str, client_payload: Mapping[str, Any]) -> bytes:
    """The JSON body of `POST /repos/{repo}/dispatches`, compact as GitHub measures it."""
    body = {"event_type": event_type, "client_payload": dict(client_payload)}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


class GitHubClient:
    """A GitHub App's client: one connection pool, one App JWT, shared installation tokens.

    Every method takes an optional `max_retries` so that request handlers can retry
    briefly and leave longer waits to a queue.
    """

    def __init__(
        self,
        api_url: str,
        app_id: str | int,
        private_key_pem: str,
        store: Caches | None,
        *,
        timeout: float = 10.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        max_hinted_wait: float = 30.0,
        max_connections: int = 128,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.app_jwt = AppJwtSigner(str(app_id), private_key_pem, clock=clock)
        self._clock = clock
        self._http = GitHubHttp(
            self.api_url,
            timeout=timeout,
            policy=RetryPolicy(
                max_retries=max_retries,
                backoff=Backoff(base=backoff_base, cap=backoff_cap, jitter=FULL_JITTER),
                max_hinted_wait=max_hinted_wait,
            ),
            transport=transport,
            max_connections=max_connections,
            clock=clock,
            sleep=sleep,
            rng=rng,
        )
        self._dispatch_routes: dict[str, tuple[str, AuthProvider, AuthRefresh]] = {}
        installations = AppInstallations(self._http, self._app_auth, repo_path, clock=clock)
        self.tokens = InstallationTokens(
            store,
            installations.lookup,
            self._create_token,
            scope=f"{app_id}@{self.api_url}",
            clock=clock,
        )

    async def __aenter__(self) -> GitHubClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    # --- authentication ----------------------------------------------------------
    async def _app_auth(self) -> str:
        return f"Bearer {self.app_jwt.token()}"

    async def _create_token(self, installation_id: int) -> InstallationToken:
        response = await self._http.request(
            "POST", f"/app/installations/{installation_id}/access_tokens", auth=self._app_auth
        )
        data = response.json()
        return InstallationToken(data["token"], _epoch(data["expires_at"]))

    async def app(self) -> dict[str, Any]:
        """The App itself (`GET /app`: id, slug, …); its bot account is `<slug>[bot]`."""
        response = await self._http.request("GET", "/app", auth=self._app_auth)
        return dict(response.json())

    async def installation_token(self, repo: str) -> str:
        """An installation token that may act on `repo` (cached; see `InstallationTokens`)."""
        return await self.tokens.token_for(repo)

    async def _repo_call(
        self, method: str, repo: str, subpath: str = "", **options: Any
    ) -> httpx.Response:
        """Call `/repos/{repo}{subpath}` with the repo's installation token."""
        return await self._as_installation(method, repo, repo_path(repo) + subpath, **options)

    async def _as_installation(
        self, method: str, repo: str, target: str, **options: Any
    ) -> httpx.Response:
        """Call `target` (a path or a `Link` URL) with `repo`'s installation token."""
        auth, refresh = self._installation_auth(repo)
        return await self._http.request(
            method, target, auth=auth, refresh_auth=refresh, acting_for=repo, **options
        )

    def _installation_auth(self, repo: str) -> tuple[AuthProvider, AuthRefresh]:
        """The `authorization` of a call for `repo`, and how to drop a refused token."""

        async def auth() -> str:
            return f"Bearer {await self.tokens.token_for(repo)}"

        async def refresh() -> None:
            await self.tokens.forget(repo)

        return auth, refresh

    async def repo_request(
        self, method: str, repo: str, subpath: str = "", **options: Any
    ) -> httpx.Response:
        """Call `/repos/{repo}{subpath}` as the App; for the feature modules beside this one."""
        return await self._repo_call(method, repo, subpath, **options)

    async def repo_pages(
        self, repo: str, subpath: str, params: Mapping[str, str], **options: Any
    ) -> list[dict[str, Any]]:
        """Every item of a listing under `/repos/{repo}`, across its pages."""
        return await self._pages(repo, subpath, None, params, **options)

    async def _pages(
        self, repo: str, subpath: str, key: str | None, params: Mapping[str, str], **options: Any
    ) -> list[dict[str, Any]]:
        """Every item of a paginated listing, following GitHub's `Link: rel="next"`."""
        items: list[dict[str, Any]] = []
        response = await self._repo_call(
            "GET", repo, subpath, params={"per_page": "100", **params}, **options
        )
        for _ in range(MAX_PAGES):
            data = response.json()
            items.extend(data[key] if key else data)
            next_url = response.links.get("next", {}).get("url")
            if not next_url:
                break
            response = await self._as_installation("GET", repo, next_url, **options)
        return items

    # --- the calls the relay makes ---------------------------------------------------
    async def dispatch(
        self,
        repo: str,
        event_type: str,
        client_payload: Mapping[str, Any],
        *,
        max_retries: int | None = None,
    ) -> None:
        """Send a `repository_dispatch` (GitHub answers 204)."""
        body = encode_dispatch(event_type, client_payload)
        await self.dispatch_encoded(repo, body, max_retries=max_retries)

    async def dispatch_encoded(
        self, repo: str, body: bytes, *, max_retries: int | None = None
    ) -> None:
        """Send a dispatch whose body `encode_dispatch` built once for every repo.

        Judged by its status alone (GitHub's 204), so the answer stays the wire's own
        (`GitHubHttp.exchange`); a repo's path and credentials are built once.
        """
        route = self._dispatch_routes.get(repo)
        if route is None:
            route = (f"{repo_path(repo)}/dispatches", *self._installation_auth(repo))
            self._dispatch_routes[repo] = route
        path, auth, refresh = route
        await self._http.exchange(
            "POST",
            path,
            auth=auth,
            refresh_auth=refresh,
            acting_for=repo,
            content=body,
            max_retries=max_retries,
        )

    async def create_check_run(
        self, repo: str, *, max_retries: int | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Create a check run (`name`, `head_sha`, `status`, `conclusion`, `output`, …)."""
        response = await self._repo_call(
            "POST", repo, "/check-runs", json=fields, max_retries=max_retries
        )
        created: dict[str, Any] = response.json()
        return created

    async def list_check_runs_in_suite(
        self, repo: str, suite_id: int, *, max_retries: int | None = None
    ) -> list[dict[str, Any]]:
        """Every (latest per name) check run of a check suite."""
        return await self._pages(
            repo,
            f"/check-suites/{int(suite_id)}/check-runs",
            "check_runs",
            {},
            max_retries=max_retries,
        )

    async def _rerun(
        self, repo: str, run_id: int, kind: str, max_retries: int | None
    ) -> RerunOutcome:
        response = await self._repo_call(
            "POST",
            repo,
            f"/actions/runs/{int(run_id)}/{kind}",
            final_ok=(403,),
            max_retries=max_retries,
        )
        if response.status_code < 400:
            return RerunOutcome.STARTED
        message = response.json().get("message", "") if response.content else ""
        if "already running" in str(message).lower():
            return RerunOutcome.ALREADY_RUNNING
        call = f"POST {repo_path(repo)}/actions/runs/{run_id}/{kind}"
        raise GitHubForbidden(call, 403, str(message))

    async def rerun_workflow(
        self, repo: str, run_id: int, *, max_retries: int | None = None
    ) -> RerunOutcome:
        """Re-run a whole workflow run; a run still going is `ALREADY_RUNNING`, not an error."""
        return await self._rerun(repo, run_id, "rerun", max_retries)

    async def rerun_failed_jobs(
        self, repo: str, run_id: int, *, max_retries: int | None = None
    ) -> RerunOutcome:
        """Re-run the failed jobs of a workflow run (same outcomes as `rerun_workflow`)."""
        return await self._rerun(repo, run_id, "rerun-failed-jobs", max_retries)

    async def get_actions_job(
        self, repo: str, job_id: int, *, max_retries: int | None = None
    ) -> dict[str, Any]:
        """An Actions job (`status`, `conclusion`, `run_attempt`, …) by its id."""
        response = await self._repo_call(
            "GET", repo, f"/actions/jobs/{int(job_id)}", max_retries=max_retries
        )
        job: dict[str, Any] = response.json()
        return job

    async def get_contents(
        self, repo: str, path: str, ref: str | None = None, *, max_retries: int | None = None
    ) -> bytes:
        """A file's bytes through the contents API.

        GitHub inlines files up to 1 MB as base64; beyond that `content` is empty and the
        file must be fetched again with the raw media type.
        """
        subpath = "/contents/" + quote(path.strip("/"), safe="/")
        params = {"ref": ref} if ref else {}
        response = await self._repo_call(
            "GET", repo, subpath, params=params, max_retries=max_retries
        )
        data = response.json()
        if not isinstance(data, dict) or data.get("type", "file") != "file":
            raise GitHubError(f"GET {repo_path(repo)}{subpath}", 200, "path is not a file")
        if data.get("encoding") == "base64":
            return base64.b64decode(data.get("content", ""))
        raw = await self._repo_call(
            "GET",
            repo,
            subpath,
            params=params,
            accept="application/vnd.github.raw",
            max_retries=max_retries,
        )
        return raw.content

    async def commit_exists(self, repo: str, sha: str, *, max_retries: int | None = None) -> bool:
        """Whether `sha` names a commit in `repo` (GitHub answers 422 or 404 when not)."""
        try:
            await self._repo_call(
                "GET",
                repo,
                "/commits/" + quote(sha, safe=""),
                accept="application/vnd.github.sha",
                max_retries=max_retries,
            )
        except (GitHubNotFound, GitHubUnprocessable):
            return False
        return True

    async def get_repo(self, repo: str, *, max_retries: int | None = None) -> dict[str, Any]:
        """The repository object (`default_branch`, …)."""
        response = await self._repo_call("GET", repo, max_retries=max_retries)
        found: dict[str, Any] = response.json()
        return found

    async def list_issue_comments(
        self, repo: str, number: int, *, max_retries: int | None = None
    ) -> list[dict[str, Any]]:
        """Every comment on an issue or pull request, oldest first."""
        return await self._pages(
            repo, f"/issues/{int(number)}/comments", None, {}, max_retries=max_retries
        )

    async def create_issue_comment(
        self, repo: str, number: int, body: str, *, max_retries: int | None = None
    ) -> dict[str, Any]:
        """Comment on an issue or pull request."""
        response = await self._repo_call(
            "POST",
            repo,
            f"/issues/{int(number)}/comments",
            json={"body": body},
            max_retries=max_retries,
        )
        created: dict[str, Any] = response.json()
        return created

    async def update_issue_comment(
        self, repo: str, comment_id: int, body: str, *, max_retries: int | None = None
    ) -> dict[str, Any]:
        """Replace a comment's body."""
        response = await self._repo_call(
            "PATCH",
            repo,
            f"/issues/comments/{int(comment_id)}",
            json={"body": body},
            max_retries=max_retries,
        )
        updated: dict[str, Any] = response.json()
        return updated
