"""The GitHub calls that propose a file change as a pull request: refs, contents, pulls, labels.

Used by `crcr levels sync` (SPEC §10.1); `crcr dispatch --pr` reads a pull request
(SPEC §12). Branches are written through the contents API (one commit per change, no
local git needed); the branch is created from the base branch's head through the git
data API, and deleted the same way.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from crcr.github.client import GitHubClient
from crcr.github.errors import GitHubNotFound, GitHubUnprocessable


@dataclass(frozen=True)
class FileAtRef:
    """A file's text on a branch and its blob SHA (which an update must name)."""

    text: str
    sha: str


def _ref(branch: str) -> str:
    return quote(f"heads/{branch}", safe="/")


class PullRequests:
    """Branches, file commits, pull requests, labels and comments in one repository."""

    def __init__(self, github: GitHubClient, repo: str) -> None:
        self._github = github
        self.repo = repo

    async def _call(self, method: str, subpath: str, **options: Any) -> Any:
        response = await self._github.repo_request(method, self.repo, subpath, **options)
        return response.json() if response.content else None

    # --- branches ------------------------------------------------------------------
    async def branch_head(self, branch: str) -> str | None:
        """The commit SHA at the tip of `branch`, or None when it does not exist."""
        try:
            found = await self._call("GET", f"/git/ref/{_ref(branch)}")
        except GitHubNotFound:
            return None
        return str(found["object"]["sha"])

    async def create_branch(self, branch: str, sha: str) -> None:
        """Create `branch` at `sha`."""
        await self._call("POST", "/git/refs", json={"ref": f"refs/heads/{branch}", "sha": sha})

    async def reset_branch(self, branch: str, sha: str) -> None:
        """Point `branch` at `sha`, even if that is not a fast-forward."""
        await self._call("PATCH", f"/git/refs/{_ref(branch)}", json={"sha": sha, "force": True})

    async def delete_branch(self, branch: str) -> bool:
        """Delete `branch`; False when it was gone already (GitHub answers 422)."""
        try:
            await self._call("DELETE", f"/git/refs/{_ref(branch)}")
        except (GitHubNotFound, GitHubUnprocessable):
            return False
        return True

    # --- files -----------------------------------------------------------------------
    async def read_file(self, path: str, ref: str) -> FileAtRef:
        """A text file and its blob SHA at `ref` (contents API, files up to 1 MB)."""
        found = await self._call(
            "GET", "/contents/" + quote(path.strip("/"), safe="/"), params={"ref": ref}
        )
        if not isinstance(found, dict) or found.get("type") != "file":
            raise GitHubUnprocessable(f"GET /repos/{self.repo}/contents/{path}", 200, "not a file")
        text = base64.b64decode(found.get("content") or "").decode()
        return FileAtRef(text, str(found["sha"]))

    async def write_file(self, path: str, branch: str, text: str, *, sha: str, message: str) -> str:
        """Commit `text` as `path` on `branch`, replacing blob `sha`; the new commit's SHA."""
        body = {
            "message": message,
            "content": base64.b64encode(text.encode()).decode(),
            "sha": sha,
            "branch": branch,
        }
        written = await self._call(
            "PUT", "/contents/" + quote(path.strip("/"), safe="/"), json=body
        )
        return str(written["commit"]["sha"])

    # --- pull requests ---------------------------------------------------------------
    async def get_pull(self, number: int) -> dict[str, Any]:
        """One pull request (head SHA, labels, state); `GitHubNotFound` when there is none."""
        found: dict[str, Any] = await self._call("GET", f"/pulls/{int(number)}")
        return found

    async def open_pulls(self) -> list[dict[str, Any]]:
        """Every open pull request of the repository (all pages)."""
        return await self._github.repo_pages(self.repo, "/pulls", {"state": "open"})

    async def create_pull(self, branch: str, base: str, title: str, body: str) -> dict[str, Any]:
        """Open a pull request from `branch` into `base`."""
        created: dict[str, Any] = await self._call(
            "POST", "/pulls", json={"title": title, "head": branch, "base": base, "body": body}
        )
        return created

    async def update_pull(self, number: int, **fields: Any) -> dict[str, Any]:
        """Change a pull request's `title`, `body` or `state`."""
        updated: dict[str, Any] = await self._call("PATCH", f"/pulls/{int(number)}", json=fields)
        return updated

    async def add_label(self, number: int, label: str) -> None:
        """Add a label to an issue or pull request (GitHub creates unknown labels)."""
        await self._call("POST", f"/issues/{int(number)}/labels", json={"labels": [label]})

    async def comment(self, number: int, body: str) -> None:
        """Comment on an issue or pull request."""
        await self._github.create_issue_comment(self.repo, number, body)
