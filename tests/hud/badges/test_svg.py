"""The badge SVG and its ETag check, as values (SPEC §13)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from crcr.hud.badges.svg import STATE_COLOURS, Badge, badge_of, render, text_width
from crcr.relay.health.badge import etag_of, matches

SVG = "{http://www.w3.org/2000/svg}"


def test_the_svg_is_well_formed_and_named_for_screen_readers() -> None:
    root = ET.fromstring(render(badge_of("L4", "failing", "pull_request")))
    assert root.get("role") == "img"
    assert root.get("aria-label") == "crcr L4 pull request: failing"
    assert root.findtext(f"{SVG}title") == "crcr L4 pull request: failing"
    fills = [rect.get("fill") for rect in root.iter(f"{SVG}rect")]
    assert fills == ["#555", STATE_COLOURS["failing"]]


def test_text_is_escaped_never_markup() -> None:
    svg = render(Badge('a<b>&"c"', "<script>", "#000"))
    root = ET.fromstring(svg)
    assert [t.text for t in root.iter(f"{SVG}text")] == ['a<b>&"c"', "<script>"]
    assert "<script>" not in svg


def test_the_boxes_grow_with_their_text() -> None:
    short, long = (
        render(badge_of("L2", "stale", None)),
        render(badge_of("L2", "no_data", "nightly")),
    )
    width = lambda svg: int(ET.fromstring(svg).get("width") or 0)  # noqa: E731
    assert width(long) > width(short)
    assert text_width("mmm") > text_width("iii")


@pytest.mark.parametrize(
    ("header", "matched"),
    [
        (None, False),
        ('"abc"', True),
        ('W/"abc"', True),
        ('"x", "abc"', True),
        ("*", True),
        ('"abd"', False),
    ],
)
def test_if_none_match_is_compared_weakly(header: str | None, matched: bool) -> None:
    assert matches(header, '"abc"') is matched


def test_the_etag_is_the_bodys_digest() -> None:
    assert etag_of(b"one") == etag_of(b"one") != etag_of(b"two")
