"""Downstream-controlled text made safe for GitHub Markdown (check runs, PR comments).

A downstream chooses its workflow and job names, run ids and links; the App posts them
on the upstream PR. Unescaped, a newline starts a heading, `@someone` notifies a
person, `![x](…)` loads a tracker image. So every such value goes through one of these:
names become one line of inline code (GitHub renders no mention, link, image or
heading inside it), ids are digits or code, links are only validated web URLs, and
mentions are only GitHub logins the allowlist names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from crcr.relay.allowlist.syntax import login_or_none
from crcr.web.web_urls import is_web_url

MAX_NAME_CHARS = 200
"""Longer names are cut (with `…`): a check-run summary is no place for a paragraph."""


def single_line(text: str, *, limit: int = MAX_NAME_CHARS) -> str:
    """`text` on one line: control, format and separator characters become spaces.

    Format characters (category Cf) include the bidirectional overrides that make text
    display in another order than it reads.
    """
    cleaned = "".join(
        " " if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") else char for char in text
    )
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def code(text: str, *, limit: int = MAX_NAME_CHARS) -> str:
    """Inline code that the text cannot leave: one line, no backticks, safe in a table.

    A `|` would end a table cell even inside code, so it is escaped the way GitHub's
    tables read it.
    """
    inner = single_line(text, limit=limit).replace("`", "'").replace("|", "\\|")
    return f"`{inner}`" if inner else "`(none)`"


def run_id_text(run_id: str) -> str:
    """A run id as shown: digits as they are (GitHub's ids), anything else as code."""
    return run_id if run_id.isdigit() else code(run_id, limit=64)


def link(label: str, url: str | None) -> str:
    """`[label](url)` when `url` is a plain https link, else just the label.

    `label` is ours (e.g. "run 123"), not a downstream's. Brackets and parentheses in
    the URL are percent-encoded so that it cannot close the link early.
    """
    if not is_web_url(url):
        return label
    assert url is not None  # is_web_url said it is a string
    safe = url.replace("(", "%28").replace(")", "%29").replace("[", "%5B").replace("]", "%5D")
    return f"[{label}]({safe})"


def mentions(logins: Iterable[str]) -> str:
    """`@login` for each valid GitHub login (the allowlist's oncalls), space-separated."""
    valid = (login_or_none(login) for login in logins)
    return " ".join(f"@{login}" for login in valid if login is not None)


def commit_text(sha: str) -> str:
    """A commit SHA cut to 12 hex digits (anything else shown as code)."""
    return sha[:12] if re.fullmatch(r"[0-9a-fA-F]{7,64}", sha) else code(sha, limit=64)
