"""Strip the invisible format characters a downstream can hide in text people read.

Unicode's format characters (category Cf: the bidirectional overrides and isolates
U+202A-U+202E and U+2066-U+2069, zero-width spaces and joiners, the byte-order mark)
display nothing themselves but can make text read in another order than it is stored,
or make two different names look the same. The GitHub-bound text already drops them;
the HUD's text (names, failed tests, triage verdicts) gets the same treatment here,
at the relay and again at HUD ingestion. Standard library only (the reporter uses it).
"""

from __future__ import annotations

import unicodedata


def has_format_characters(text: str) -> bool:
    """Whether `text` holds a format character (ASCII never does: the fast path)."""
    return not text.isascii() and any(unicodedata.category(c) == "Cf" for c in text)


def visible(text: str) -> str:
    """`text` without its format characters; everything else, newlines included, kept."""
    if not has_format_characters(text):
        return text
    return "".join(c for c in text if unicodedata.category(c) != "Cf")
