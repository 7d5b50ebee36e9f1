"""GitHub's REST object shapes as webhooks carry them: users, repositories, labels, apps.

They are deliberately bulky (every URL template GitHub sends) so that the relay's
payload trimming is exercised on realistic sizes. Everything is a pure function of
its arguments: ids come from names, so the same inputs give the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from typing import Any

API = "https://api.github.com"
WEB = "https://github.com"
DEFAULT_TIME = "2026-01-15T10:00:00Z"

_USER_LINKS = (
    ("followers_url", "/followers"),
    ("following_url", "/following{/other_user}"),
    ("gists_url", "/gists{/gist_id}"),
    ("starred_url", "/starred{/owner}{/repo}"),
    ("subscriptions_url", "/subscriptions"),
    ("organizations_url", "/orgs"),
    ("repos_url", "/repos"),
    ("events_url", "/events{/privacy}"),
    ("received_events_url", "/received_events"),
)

_REPO_LINKS = (
    ("forks_url", "/forks"),
    ("keys_url", "/keys{/key_id}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("teams_url", "/teams"),
    ("hooks_url", "/hooks"),
    ("issue_events_url", "/issues/events{/number}"),
    ("events_url", "/events"),
    ("assignees_url", "/assignees{/user}"),
    ("branches_url", "/branches{/branch}"),
    ("tags_url", "/tags"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("trees_url", "/git/trees{/sha}"),
    ("statuses_url", "/statuses/{sha}"),
    ("languages_url", "/languages"),
    ("stargazers_url", "/stargazers"),
    ("contributors_url", "/contributors"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("commits_url", "/commits{/sha}"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("comments_url", "/comments{/number}"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("contents_url", "/contents/{+path}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("merges_url", "/merges"),
    ("archive_url", "/{archive_format}{/ref}"),
    ("downloads_url", "/downloads"),
    ("issues_url", "/issues{/number}"),
    ("pulls_url", "/pulls{/number}"),
    ("milestones_url", "/milestones{/number}"),
    ("notifications_url", "/notifications{?since,all,participating}"),
    ("labels_url", "/labels{/name}"),
    ("releases_url", "/releases{/id}"),
    ("deployments_url", "/deployments"),
)


def stable_id(text: str, *, low: int = 1_000_000, span: int = 900_000_000) -> int:
    """Derive a stable GitHub-like numeric id from a name (same name, same id).

    GitHub's names are case-insensitive and an object's id does not depend on how a
    name is spelt (`Org/Repo` and `org/repo` are one repository, one id), so neither
    does this one.
    """
    return low + zlib.crc32(text.lower().encode()) % span


def node_id(kind: str, number: int) -> str:
    """A GitHub-style global node id (legacy base64 form) for an object."""
    return base64.b64encode(f"0{len(kind)}:{kind}{number}".encode()).decode()


def fake_sha(seed: str) -> str:
    """A deterministic 40-hex commit SHA for a seed string."""
    return hashlib.sha1(seed.encode()).hexdigest()  # noqa: S324 - an id, not security


def user(login: str, *, kind: str = "User") -> dict[str, Any]:
    """A full user (or organization / bot) object as it appears inside payloads."""
    number = stable_id(login)
    base = f"{API}/users/{login}"
    return {
        "login": login,
        "id": number,
        "node_id": node_id(kind, number),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
        "gravatar_id": "",
        "url": base,
        "html_url": f"{WEB}/{login}",
        **{name: base + suffix for name, suffix in _USER_LINKS},
        "type": kind,
        "user_view_type": "public",
        "site_admin": False,
    }


def repository(
    full_name: str,
    *,
    default_branch: str = "main",
    for_push: bool = False,
    at: str = DEFAULT_TIME,
) -> dict[str, Any]:
    """A full repository object with its many URL templates.

    Push payloads differ from the rest: times are epoch seconds and the owner also
    carries `name` and `email` (GitHub's legacy push format).
    """
    owner_login, _, name = full_name.partition("/")
    number = stable_id(full_name)
    base = f"{API}/repos/{full_name}"
    owner = user(owner_login, kind="Organization")
    created: str | int = "2016-08-13T05:44:04Z"
    pushed: str | int = at
    if for_push:
        owner = {"name": owner_login, "email": None, **owner}
        created, pushed = 1471067044, 1768471200
    repo: dict[str, Any] = {
        "id": number,
        "node_id": node_id("Repository", number),
        "name": name,
        "full_name": full_name,
        "private": False,
        "owner": owner,
        "html_url": f"{WEB}/{full_name}",
        "description": f"{name}: tensors and dynamic neural networks with strong acceleration",
        "fork": False,
        "url": base,
        **{key: base + suffix for key, suffix in _REPO_LINKS},
        "created_at": created,
        "updated_at": at,
        "pushed_at": pushed,
        "git_url": f"git://github.com/{full_name}.git",
        "ssh_url": f"git@github.com:{full_name}.git",
        "clone_url": f"{WEB}/{full_name}.git",
        "svn_url": f"{WEB}/{full_name}",
        "homepage": f"https://{name}.org",
        "size": 1_093_412,
        "stargazers_count": 91_234,
        "watchers_count": 91_234,
        "language": "Python",
        "has_issues": True,
        "has_projects": True,
        "has_downloads": True,
        "has_wiki": True,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 24_567,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 15_204,
        "license": {
            "key": "other",
            "name": "Other",
            "spdx_id": "NOASSERTION",
            "url": None,
            "node_id": "MDc6TGljZW5zZTA=",
        },
        "allow_forking": True,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": ["deep-learning", "gpu", "machine-learning", "neural-network", "python"],
        "visibility": "public",
        "forks": 24_567,
        "open_issues": 15_204,
        "watchers": 91_234,
        "default_branch": default_branch,
    }
    if for_push:
        repo["stargazers"] = repo["stargazers_count"]
        repo["master_branch"] = default_branch
        repo["organization"] = owner_login
    return repo


def label(repo_full_name: str, name: str) -> dict[str, Any]:
    """A label object."""
    number = stable_id(f"{repo_full_name}#label:{name}")
    return {
        "id": number,
        "node_id": node_id("Label", number),
        "url": f"{API}/repos/{repo_full_name}/labels/{name}",
        "name": name,
        "color": "c5def5",
        "default": False,
        "description": None,
    }


def organization(login: str) -> dict[str, Any]:
    """The `organization` object webhooks of organization-owned repositories carry."""
    number = stable_id(login)
    base = f"{API}/orgs/{login}"
    return {
        "login": login,
        "id": number,
        "node_id": node_id("Organization", number),
        "url": base,
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events",
        "hooks_url": f"{base}/hooks",
        "issues_url": f"{base}/issues",
        "members_url": f"{base}/members{{/member}}",
        "public_members_url": f"{base}/public_members{{/member}}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
        "description": "",
    }


def installation(installation_id: int) -> dict[str, Any]:
    """The `installation` stub GitHub App webhooks carry."""
    return {"id": installation_id, "node_id": node_id("IntegrationInstallation", installation_id)}


def github_app(slug: str = "crcr-relay", *, owner_login: str = "pytorch") -> dict[str, Any]:
    """The GitHub App object inside check runs and suites."""
    number = stable_id(f"app:{slug}")
    return {
        "id": number,
        "client_id": f"Iv1.{fake_sha(slug)[:16]}",
        "slug": slug,
        "node_id": node_id("App", number),
        "owner": user(owner_login, kind="Organization"),
        "name": slug,
        "description": "Cross-Repository CI Relay",
        "external_url": f"https://{slug}.example.org",
        "html_url": f"{WEB}/apps/{slug}",
        "created_at": "2025-06-01T00:00:00Z",
        "updated_at": "2025-06-01T00:00:00Z",
        "permissions": {"checks": "write", "contents": "read", "metadata": "read"},
        "events": ["check_run", "check_suite", "pull_request", "push"],
    }
