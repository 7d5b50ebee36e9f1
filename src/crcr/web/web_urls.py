"""Which downstream-supplied links may be stored, shown and sent to GitHub.

A run or artifact link comes from a downstream's callback, and the HUD renders it as an
`<a href>`: a `javascript:` or `data:` link would run in a viewer's browser. Only plain
web URLs pass, at the relay and again at HUD ingestion (which also takes bodies from
other relays).
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2000
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\<>\"'`]")
_HOST = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")
_PLAIN = re.compile(r"https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[^\x00-\x20\x7f\\<>\"'`]*)?")
"""The usual link, which every check below passes: a lower-case `https://`, a host name
(and port), then a path free of what `_FORBIDDEN` refuses. Matched first, it spares the
URL split of every callback's run link (the checks' reasons stay the full path's)."""


def web_url_problem(url: str, *, allow_http: bool = False) -> str | None:
    """What is wrong with `url` as a link, or None when it is a plain web URL.

    `allow_http` is for the sandbox, whose stand-in servers speak plain HTTP.
    """
    if len(url) <= MAX_URL_LENGTH and _PLAIN.fullmatch(url):
        return None
    return checked_url_problem(url, allow_http=allow_http)


def checked_url_problem(url: str, *, allow_http: bool = False) -> str | None:
    """`web_url_problem` without its shortcut for the usual link: every check, in order."""
    schemes = ("https", "http") if allow_http else ("https",)
    wanted = " or ".join(f"{scheme}://" for scheme in schemes)
    if len(url) > MAX_URL_LENGTH:
        return f"must be at most {MAX_URL_LENGTH} characters"
    if _FORBIDDEN.search(url):
        return "must not contain whitespace, control characters, quotes or backslashes"
    try:
        parts = urlsplit(url)
    except ValueError:
        return f"must be an {wanted} URL"
    if parts.scheme.lower() not in schemes or not url.lower().startswith(f"{parts.scheme}://"):
        return f"must be an {wanted} URL"
    if "@" in parts.netloc:
        return "must not carry a user name or password"
    if not _HOST.fullmatch(parts.netloc):
        return "must name a host"
    return None


def is_web_url(url: object, *, allow_http: bool = False) -> bool:
    """Whether `url` is a string that `web_url_problem` finds nothing wrong with."""
    return isinstance(url, str) and web_url_problem(url, allow_http=allow_http) is None


@lru_cache(maxsize=8)
def github_web_url(api_url: str) -> str:
    """The web address of the GitHub behind a REST API URL.

    Remembered: every callback asks it of the one configured URL (a URL split each time).

    `https://api.github.com` → `https://github.com`; GitHub Enterprise Server's
    `https://HOST/api/v3` → `https://HOST`. Anything else (the sandbox) stands in for
    github.com, whose run URLs the simulated downstreams report.
    """
    parts = urlsplit(api_url)
    if parts.path.rstrip("/").endswith("/api/v3"):
        return f"{parts.scheme}://{parts.netloc}"
    return "https://github.com"


def actions_run_url(web_url: str, repo: str, run_id: str) -> str:
    """A GitHub Actions run's page."""
    return f"{web_url}/{repo}/actions/runs/{run_id}"


_RUN_PAGE_TAIL = re.compile(r"(/attempts/[0-9]{1,9}|/job/[0-9]{1,20})?")


def is_run_url_of(url: str, web_url: str, repo: str, run_id: str) -> bool:
    """Whether `url` is the page of that run (or of one of its attempts or jobs).

    The run's page is compared as a string, case-insensitively: a pattern built around
    it would be compiled anew for every run (re's cache holds 512), 3 % of a callback.
    """
    base = actions_run_url(web_url, repo, run_id)
    head = url[: len(base)]
    return head.lower() == base.lower() and _RUN_PAGE_TAIL.fullmatch(url, len(base)) is not None
