"""`SandboxGitHub`: the in-memory world behind the sandbox REST API, and its test handles."""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from crcr.sandbox.call_log import CallLog, CallRecord
from crcr.sandbox.faults import FaultPlan, FaultRule
from crcr.sandbox.github_auth import verify_app_jwt
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_jobs import ActionsJobs
from crcr.sandbox.github_model import (
    ApiError,
    Dispatch,
    Installation,
    IssuedToken,
    Repo,
    Rerun,
    WorkflowRun,
)
from crcr.sandbox.github_pulls import label_json

DispatchListener = Callable[[Dispatch], None]


API_ROOT = "https://api.github.com"


def _split_repo(full_name: str) -> str:
    owner, sep, name = full_name.partition("/")
    if not (owner and sep and name) or "/" in name:
        raise ValueError(f"repository must be owner/name, got {full_name!r}")
    return full_name


class SandboxGitHub:
    """A stateful GitHub stand-in: set the world up, let the relay act, assert on the log.

    Every method is safe to call from tests while a real server thread serves requests
    (one lock guards the state). Time comes from `clock`, so tests can move it.
    """

    def __init__(
        self,
        *,
        app: SandboxApp | None = None,
        clock: Callable[[], float] = time.time,
        token_lifetime: float = 3600.0,
    ) -> None:
        self.app = app or SandboxApp.generate()
        self.clock = clock
        self.token_lifetime = token_lifetime
        self.call_log = CallLog()
        self.faults = FaultPlan()
        self.lock = threading.RLock()
        self._ids = itertools.count(1001)
        self._repos: dict[str, Repo] = {}
        self._installations: dict[int, Installation] = {}
        self._tokens: dict[str, IssuedToken] = {}
        self._dispatches: list[Dispatch] = []
        self._reruns: list[Rerun] = []
        self._dispatch_listeners: list[DispatchListener] = []
        self.tokens_issued = 0
        self.jobs = ActionsJobs()

    def next_id(self) -> int:
        """A fresh id for any object (GitHub ids are unique integers too)."""
        with self.lock:
            return next(self._ids)

    # --- setting the world up -------------------------------------------------
    def add_repo(
        self, full_name: str, *, default_branch: str = "main", private: bool = False
    ) -> Repo:
        """Create a repository (or return the existing one)."""
        _split_repo(full_name)
        with self.lock:
            existing = self._repos.get(full_name.lower())
            if existing is not None:
                return existing
            repo = Repo(self.next_id(), full_name, default_branch=default_branch, private=private)
            self._repos[full_name.lower()] = repo
            return repo

    def install_app(self, *repos: str) -> int:
        """Install the App on repositories (creating them); one installation per owner."""
        installation_id = 0
        with self.lock:
            for full_name in repos:
                repo = self.add_repo(full_name)
                installation = self._installation_of_account(repo.owner)
                installation.repos.add(full_name.lower())
                installation_id = installation.id
        return installation_id

    def uninstall_app(self, full_name: str) -> None:
        """Remove a repository from its installation (its tokens stop working on it)."""
        with self.lock:
            for installation in self._installations.values():
                installation.repos.discard(full_name.lower())

    def add_file(
        self, full_name: str, path: str, content: bytes | str, *, ref: str | None = None
    ) -> None:
        """Put a file at `path` on `ref` (default: the default branch)."""
        repo = self.add_repo(full_name)
        data = content.encode() if isinstance(content, str) else content
        with self.lock:
            repo.files[(ref or repo.default_branch, path.strip("/"))] = data

    def add_commit(
        self, full_name: str, sha: str | None = None, *, message: str = "A commit"
    ) -> str:
        """Record a commit and return its SHA (random when not given)."""
        repo = self.add_repo(full_name)
        commit_sha = (sha or secrets.token_hex(20)).lower()
        with self.lock:
            repo.commits[commit_sha] = {"message": message, "timestamp": self.clock()}
        return commit_sha

    def add_pull(
        self,
        full_name: str,
        number: int,
        *,
        head_sha: str,
        head: str = "feature",
        base: str = "main",
        labels: tuple[str, ...] = (),
        title: str = "A change",
    ) -> None:
        """Open pull request `number` whose head is commit `head_sha` (from a fork's branch)."""
        repo = self.add_repo(full_name)
        self.add_commit(full_name, head_sha)
        with self.lock:
            now = self.clock()
            repo.pulls[number] = {
                "id": self.next_id(),
                "number": number,
                "state": "open",
                "title": title,
                "body": None,
                "head": head,
                "head_sha": head_sha.lower(),
                "base": base,
                "labels": [label_json(repo, name, self.next_id(), API_ROOT) for name in labels],
                "user": {"login": "contributor", "type": "User"},
                "created_at": now,
                "updated_at": now,
                "closed_at": None,
            }
            repo.last_number = max(repo.last_number, number)

    def record_pull_head(
        self,
        full_name: str,
        number: int,
        *,
        head_sha: str,
        labels: tuple[str, ...] = (),
        title: str = "",
    ) -> None:
        """Open pull request `number` at `head_sha`, or move an open one's head there.

        For PRs whose webhooks are sent from outside (the demo, `crcr sandbox webhook`):
        the sandbox keeps every head the PR had, so its PR view shows each one's check
        runs; labels only accumulate, as `labeled` events add them.
        """
        repo = self.add_repo(full_name)
        with self.lock:
            pull = repo.pulls.get(number)
            if pull is None:
                self.add_pull(full_name, number, head_sha=head_sha, title=title or f"PR #{number}")
                pull = repo.pulls[number]
            else:
                self.add_commit(full_name, head_sha)
                pull["head_sha"] = head_sha.lower()
                pull["updated_at"] = self.clock()
            heads: list[str] = pull.setdefault("heads", [])
            if head_sha.lower() not in heads:
                heads.append(head_sha.lower())
            known = {label["name"] for label in pull["labels"]}
            for name in labels:
                if name not in known:
                    pull["labels"].append(label_json(repo, name, self.next_id(), API_ROOT))
            if title:
                pull["title"] = title

    def add_workflow_run(
        self,
        full_name: str,
        run_id: int | None = None,
        *,
        status: str = "completed",
        conclusion: str | None = "failure",
    ) -> int:
        """Record an Actions run so that re-run requests have something to act on."""
        repo = self.add_repo(full_name)
        chosen = run_id if run_id is not None else self.next_id()
        with self.lock:
            repo.workflow_runs[chosen] = WorkflowRun(chosen, status=status, conclusion=conclusion)
        return chosen

    def set_run_status(
        self, full_name: str, run_id: int, status: str, conclusion: str | None = None
    ) -> None:
        """Move a run to `status` (e.g. `in_progress`, so that a re-run gets refused)."""
        with self.lock:
            run = self.repo(full_name).workflow_runs[run_id]
            run.status, run.conclusion = status, conclusion

    def expire_tokens(self) -> None:
        """Make every issued installation token invalid (as if an hour had passed)."""
        with self.lock:
            self._tokens.clear()

    def add_dispatch_listener(self, listener: DispatchListener) -> None:
        """Call `listener` with every accepted dispatch (simulated CI starts runs from it)."""
        with self.lock:
            self._dispatch_listeners.append(listener)

    # --- faults and the call log -----------------------------------------------
    def inject_fault(self, path: str = "*", **behaviour: Any) -> FaultRule:
        """Shape matching calls; see `FaultRule` (e.g. `status=502, times=3`)."""
        return self.faults.add(FaultRule(path=path, **behaviour))

    def clear_faults(self) -> None:
        """Back to normal behaviour."""
        self.faults.clear()

    def calls(
        self, method: str | None = None, path: str | None = None, repo: str | None = None
    ) -> list[CallRecord]:
        """Calls received, filtered by method, path glob and repository."""
        return self.call_log.calls(method, path, repo)

    async def wait_for(self, condition: Callable[[], bool], *, within: float = 5.0) -> None:
        """Wait until `condition()` holds; TimeoutError otherwise."""
        await self.call_log.wait_for(condition, within=within)

    # --- inspecting what the relay did -----------------------------------------
    def has_repo(self, full_name: str) -> bool:
        """Whether the repository exists in the sandbox."""
        with self.lock:
            return full_name.lower() in self._repos

    def repo(self, full_name: str) -> Repo:
        """The repository record; 404 when it does not exist."""
        with self.lock:
            repo = self._repos.get(full_name.lower())
        if repo is None:
            raise ApiError(404, "Not Found")
        return repo

    def dispatches(self, repo: str | None = None) -> list[Dispatch]:
        """Dispatches accepted, oldest first."""
        with self.lock:
            return [d for d in self._dispatches if repo is None or d.repo.lower() == repo.lower()]

    def reruns(self, repo: str | None = None) -> list[Rerun]:
        """Re-runs accepted, oldest first."""
        with self.lock:
            return [r for r in self._reruns if repo is None or r.repo.lower() == repo.lower()]

    def check_runs(self, full_name: str) -> list[dict[str, Any]]:
        """Check runs created in a repository, oldest first."""
        with self.lock:
            return list(self.repo(full_name).check_runs)

    def comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        """Comments on an issue or pull request, oldest first."""
        with self.lock:
            return list(self.repo(full_name).comments.get(number, []))

    def pulls(self, full_name: str, *, state: str = "all") -> list[dict[str, Any]]:
        """Pull requests as stored (number, state, title, body, head, base, labels)."""
        with self.lock:
            pulls = sorted(self.repo(full_name).pulls.values(), key=lambda p: p["number"])
            return [dict(p) for p in pulls if state in ("all", p["state"])]

    def close_pull(self, full_name: str, number: int) -> dict[str, Any]:
        """Close pull request `number` unmerged, as a maintainer's "Close" button does."""
        with self.lock:
            pull = self.repo(full_name).pulls[number]
            now = self.clock()
            pull.update(state="closed", closed_at=now, updated_at=now)
            return dict(pull)

    def merge_pull(self, full_name: str, number: int, *, by: str) -> dict[str, Any]:
        """Merge pull request `number` as a maintainer's "Merge" button does: the head
        branch's files land on the base branch and the pull request says it merged."""
        with self.lock:
            repo = self.repo(full_name)
            pull = repo.pulls[number]
            head, base = pull["head"], pull["base"]
            for (ref, path), data in list(repo.files.items()):
                if ref == head:
                    repo.files[(base, path)] = data
            now = self.clock()
            pull.update(
                state="closed",
                merged=True,
                merged_by=by,
                closed_at=now,
                merged_at=now,
                updated_at=now,
            )
            return dict(pull)

    def file_text(self, full_name: str, path: str, ref: str | None = None) -> str | None:
        """A file's text on a branch (default: the default branch), or None."""
        with self.lock:
            repo = self.repo(full_name)
            data = repo.files.get((ref or repo.default_branch, path.strip("/")))
        return None if data is None else data.decode()

    def branches(self, full_name: str) -> list[str]:
        """Every branch that has files or a commit."""
        with self.lock:
            repo = self.repo(full_name)
            return sorted({ref for ref, _ in repo.files} | set(repo.refs))

    # --- used by the routes ------------------------------------------------------
    def verify_app(self, token: str) -> None:
        """Accept a valid App JWT or raise 401."""
        verify_app_jwt(self.app, token, self.clock())

    def installation_of_repo(self, full_name: str) -> Installation:
        """The installation covering a repository; 404 when the App is not installed there."""
        with self.lock:
            for installation in self._installations.values():
                if installation.covers(full_name):
                    return installation
        raise ApiError(404, "Not Found")

    def installations(self) -> list[Installation]:
        """Every installation of the App."""
        with self.lock:
            return list(self._installations.values())

    def installation(self, installation_id: int) -> Installation:
        """An installation by id; 404 when unknown."""
        with self.lock:
            found = self._installations.get(installation_id)
        if found is None:
            raise ApiError(404, "Not Found")
        return found

    def issue_token(self, installation_id: int) -> tuple[str, float]:
        """Mint an installation token; returns (token, expires_at)."""
        self.installation(installation_id)
        token = "ghs_" + secrets.token_urlsafe(27).replace("-", "a").replace("_", "b")[:36]
        expires_at = self.clock() + self.token_lifetime
        with self.lock:
            self._tokens[token] = IssuedToken(installation_id, expires_at)
            self.tokens_issued += 1
        return token, expires_at

    def repo_for_token(self, token: str, full_name: str) -> Repo:
        """The repository a token may act on; 401 for bad tokens, 404 outside its installation."""
        with self.lock:
            issued = self._tokens.get(token)
        if issued is None or issued.expires_at <= self.clock():
            raise ApiError(401, "Bad credentials")
        if not self.installation(issued.installation_id).covers(full_name):
            raise ApiError(404, "Not Found")
        return self.repo(full_name)

    def record_dispatch(self, dispatch: Dispatch) -> None:
        """Keep an accepted dispatch and tell the listeners."""
        with self.lock:
            self._dispatches.append(dispatch)
            listeners = list(self._dispatch_listeners)
        for listener in listeners:
            listener(dispatch)

    def record_rerun(self, rerun: Rerun) -> None:
        """Keep an accepted re-run."""
        with self.lock:
            self._reruns.append(rerun)

    def _installation_of_account(self, account: str) -> Installation:
        for installation in self._installations.values():
            if installation.account.lower() == account.lower():
                return installation
        installation = Installation(self.next_id(), account)
        self._installations[installation.id] = installation
        return installation
