"""A shields-style badge drawn as one self-contained SVG (SPEC §13).

Pure. A README badge is fetched through GitHub's image proxy and shown on pages that
forbid scripts and third-party fonts, so the SVG names no external font, script,
stylesheet or link: its only URL is the SVG namespace itself. Text is measured with a
small table of Verdana's advance widths (the face shields.io measures with; generic
fallbacks keep the look close where Verdana is missing), since no font can be loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

SVG_NAMESPACE = "http://www.w3.org/2000/svg"
FONT_FAMILY = "Verdana,Geneva,DejaVu Sans,sans-serif"
FONT_SIZE = 11
PADDING = 6
LABEL_COLOUR = "#555"

STATE_COLOURS = {
    "passing": "#2e7d32",
    "failing": "#c62828",
    "flaky": "#b35c00",
    "stale": "#6d6d6d",
    "no_data": "#6d6d6d",
    "unlisted": "#6d6d6d",
}
"""Fill per state: dark enough that white 11px text keeps a 4.5:1 contrast."""

_NARROW = set("fijlrt.,:;|!'()[] ")
_WIDE = set("mwMW@%")


def text_width(text: str) -> int:
    """An estimate of `text`'s width in pixels at 11px Verdana (within a few pixels)."""
    width = 0.0
    for char in text:
        if char in _NARROW:
            width += 3.9
        elif char in _WIDE:
            width += 10.5
        elif char.isupper() or char.isdigit():
            width += 7.5
        else:
            width += 6.6
    return round(width)


@dataclass(frozen=True)
class Badge:
    """What a badge says: `label` on grey, `message` on its state's colour."""

    label: str
    message: str
    colour: str

    @property
    def title(self) -> str:
        """The badge as one line of text (its accessible name)."""
        return f"{self.label}: {self.message}"


def badge_of(level: str, state: str, event: str | None) -> Badge:
    """The badge of a backend at `level` in `state`, judged on `event` (None: the default)."""
    label = f"crcr {level}" if event is None else f"crcr {level} {event.replace('_', ' ')}"
    return Badge(label, state.replace("_", " "), STATE_COLOURS.get(state, "#6d6d6d"))


def render(badge: Badge) -> str:
    """The SVG text of `badge`: two flat boxes, their text, a title; nothing external."""
    left = text_width(badge.label) + 2 * PADDING
    right = text_width(badge.message) + 2 * PADDING
    total = left + right
    label, message, title = escape(badge.label), escape(badge.message), escape(badge.title)
    return (
        f'<svg xmlns="{SVG_NAMESPACE}" width="{total}" height="20" role="img" '
        f'aria-label="{escape(badge.title, {chr(34): "&quot;"})}">'
        f"<title>{title}</title>"
        f'<rect width="{left}" height="20" fill="{LABEL_COLOUR}"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{badge.colour}"/>'
        f'<g fill="#fff" text-anchor="middle" font-family="{FONT_FAMILY}" '
        f'font-size="{FONT_SIZE}">'
        f'<text x="{left / 2:g}" y="14">{label}</text>'
        f'<text x="{left + right / 2:g}" y="14">{message}</text>'
        "</g></svg>"
    )
