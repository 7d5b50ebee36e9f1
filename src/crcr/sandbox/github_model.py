"""The sandbox GitHub's records: repositories, installations, tokens, runs, dispatches."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

DOCS_URL = "https://docs.github.com/rest"
ACTIVE_RUN_STATUSES = frozenset({"queued", "in_progress", "waiting", "requested", "pending"})


class ApiError(Exception):
    """A GitHub-shaped error answer: status, message and optional headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """The JSON body GitHub sends with an error."""
        return {"message": self.message, "documentation_url": DOCS_URL, "status": str(self.status)}


def iso(timestamp: float) -> str:
    """Format epoch seconds the way GitHub does: `2024-05-01T12:00:00Z`."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_blob_sha(content: bytes) -> str:
    """The object id git gives a file's content (what the contents API calls `sha`)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


@dataclass
class Installation:
    """The App installed on an account, covering some of its repositories."""

    id: int
    account: str
    repos: set[str] = field(default_factory=set)

    def covers(self, repo: str) -> bool:
        """Whether a token of this installation may act on `repo`."""
        return repo.lower() in self.repos


@dataclass(frozen=True)
class IssuedToken:
    """An installation access token the sandbox handed out."""

    installation_id: int
    expires_at: float


@dataclass
class WorkflowRun:
    """An Actions run whose status decides whether a re-run is refused."""

    id: int
    status: str = "completed"
    conclusion: str | None = "failure"
    run_attempt: int = 1


class Dispatch:
    """A `repository_dispatch` the sandbox accepted.

    One the API received keeps its request body as it came, and `client_payload` is
    parsed from it when first read: a fan-out's 25 KB payloads kept parsed were tens of
    container objects each, thousands per event, for every full garbage collection to
    walk again.
    """

    __slots__ = ("_body", "_client_payload", "event_type", "repo", "timestamp")

    def __init__(
        self, repo: str, event_type: str, client_payload: dict[str, Any], timestamp: float
    ) -> None:
        self.repo = repo
        self.event_type = event_type
        self.timestamp = timestamp
        self._client_payload: dict[str, Any] | None = client_payload
        self._body = b""

    @classmethod
    def received(cls, repo: str, event_type: str, body: bytes, timestamp: float) -> Dispatch:
        """A dispatch as the API received it: its (already validated) JSON request body."""
        dispatch = cls(repo, event_type, {}, timestamp)
        dispatch._client_payload, dispatch._body = None, body
        return dispatch

    @property
    def client_payload(self) -> dict[str, Any]:
        """The dispatch's `client_payload` (an object: the API refuses anything else)."""
        if self._client_payload is None:
            self._client_payload = json_document(self._body).get("client_payload", {})
        return self._client_payload

    def __repr__(self) -> str:
        return f"Dispatch({self.repo!r}, {self.event_type!r}, at {self.timestamp})"


def json_document(raw: bytes) -> Any:
    """The JSON in `raw`; ValueError when it does not parse.

    orjson parses a fan-out's 25 KB bodies ~2.5x faster; what it refuses that json
    accepts (integers past 64 bits, NaN) is left to json.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


@dataclass(frozen=True)
class Rerun:
    """A re-run request the sandbox accepted (`rerun` or `rerun-failed-jobs`)."""

    repo: str
    run_id: int
    kind: str
    timestamp: float


@dataclass
class Repo:
    """A repository and everything the relay can read or write in it."""

    id: int
    full_name: str
    default_branch: str = "main"
    private: bool = False
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)
    check_suites: dict[str, int] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    workflow_runs: dict[int, WorkflowRun] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)  # branch → commit SHA
    trees: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit → files
    parents: dict[str, str | None] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)  # number → stored fields
    last_number: int = 0  # issues and pull requests share their numbers
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)  # number → stored fields

    @property
    def owner(self) -> str:
        """The account that owns the repository."""
        return self.full_name.split("/", 1)[0]

    def as_json(self, api_base: str) -> dict[str, Any]:
        """GitHub's full repository object (`GET /repos/{o}/{r}`), every required field."""
        from crcr.sandbox.webhooks.objects import repository

        return {
            **repository(self.full_name, default_branch=self.default_branch),
            "id": self.id,
            "node_id": f"R_{self.id}",
            "private": self.private,
            "url": f"{api_base}/repos/{self.full_name}",
            "visibility": "private" if self.private else "public",
            "network_count": 0,
            "subscribers_count": 0,
        }
