"""The README badge's Markdown for a downstream (SPEC §13 `GET /badge/<owner>/<repo>.svg`).

Pure. The relay serves the badge and the dashboard on the same origin as its callback
URL, so both links are built from `--callback-url`; the repository is `--repo`, or a
placeholder the command says to replace.
"""

from __future__ import annotations

import re

from crcr.init.workflow import InitError

PLACEHOLDER_REPO = "OWNER/REPO"
CALLBACK_PATH = "/github/callback"
_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")


def relay_base(callback_url: str) -> str:
    """The relay's origin and prefix: the callback URL without `/github/callback`."""
    base = callback_url.rstrip("/")
    return base.removesuffix(CALLBACK_PATH)


def check_repo(repo: str | None) -> str:
    """`--repo` as given (owner/repo), or the placeholder when it was not."""
    if not repo:
        return PLACEHOLDER_REPO
    if not _REPO.fullmatch(repo):
        raise InitError(f"--repo must be OWNER/REPO, got {repo!r}")
    return repo


def badge_markdown(callback_url: str, repo: str) -> str:
    """`[![crcr](<relay>/badge/<repo>.svg)](<relay>/crcr/<repo>)`: the badge, linking the HUD."""
    base = relay_base(callback_url)
    return f"[![crcr]({base}/badge/{repo}.svg)]({base}/crcr/{repo})"
