"""Where `CRCR_ALLOWLIST` points: a file, an https URL, or a GitHub blob URL (SPEC §2)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Refresh floors of SPEC §2. A GitHub source costs API quota on every read, so it is
# asked at most every 15 minutes; a file or a plain URL is cheap.
FILE_TTL_FLOOR = 60
URL_TTL_FLOOR = 60
GITHUB_TTL_FLOOR = 900


@dataclass(frozen=True)
class FileLocation:
    """An allowlist file on local disk (or a mounted volume)."""

    path: Path

    def __str__(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class UrlLocation:
    """An allowlist served over HTTPS (plain HTTP only from this machine, for development)."""

    url: str

    def __str__(self) -> str:
        # Userinfo and query strings may hold credentials: never shown.
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"


@dataclass(frozen=True)
class GitHubBlobLocation:
    """A file in a GitHub repository, read through the contents API at `ref`."""

    repo: str
    ref: str
    path: str

    def __str__(self) -> str:
        return f"{self.repo}/blob/{self.ref}/{self.path}"


AllowlistLocation = FileLocation | UrlLocation | GitHubBlobLocation


def ttl_floor(location: AllowlistLocation) -> int:
    """The shortest refresh interval SPEC §2 allows for this kind of source."""
    if isinstance(location, GitHubBlobLocation):
        return GITHUB_TTL_FLOOR
    if isinstance(location, UrlLocation):
        return URL_TTL_FLOOR
    return FILE_TTL_FLOOR


def parse_location(
    text: str, *, github_hosts: frozenset[str] = frozenset({"github.com"})
) -> AllowlistLocation:
    """Classify an allowlist source; `ValueError` says what is wrong with it.

    `github_hosts` are the web hosts whose blob URLs are read through the API (github.com,
    plus a GitHub Enterprise Server's host). A ref containing `/` cannot be told apart from
    the path in a blob URL; as GitHub's own URLs do, the first segment is taken as the ref.
    """
    text = text.strip()
    if not text:
        raise ValueError("is empty")
    scheme, sep, _ = text.partition("://")
    if not sep:
        return FileLocation(Path(text).expanduser())
    scheme = scheme.lower()
    parts = urlsplit(text)
    if scheme == "file":
        return FileLocation(Path(unquote(parts.path)))
    if scheme not in ("https", "http"):
        raise ValueError(f"unsupported scheme {scheme}:// (use a path, https:// or a blob URL)")
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError("the URL has no host")
    if host in github_hosts:
        return _blob_location(parts.path)
    if scheme == "http" and not _is_loopback(host):
        raise ValueError("must use https:// (plain http:// is only for this machine)")
    return UrlLocation(text)


def _blob_location(url_path: str) -> GitHubBlobLocation:
    segments = [unquote(segment) for segment in url_path.split("/") if segment]
    if len(segments) < 5 or segments[2] != "blob":
        raise ValueError(
            "a GitHub URL must be a blob URL: https://github.com/<owner>/<repo>/blob/<ref>/<path>"
        )
    owner, repo, _, ref, *path = segments
    return GitHubBlobLocation(f"{owner}/{repo}", ref, "/".join(path))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
