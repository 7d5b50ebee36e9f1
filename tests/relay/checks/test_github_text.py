"""Downstream text on GitHub: one line of code, digits, checked links, allowlisted mentions."""

from __future__ import annotations

import re

import pytest

from crcr.relay.checks.github_text import (
    code,
    commit_text,
    link,
    mentions,
    run_id_text,
    single_line,
)

HOSTILE = "build\n\n# Pwned @victim @org/team ![x](https://evil.example/x.png)\r\n| a |`b`"


def outside_code(markdown: str) -> str:
    """What GitHub renders as Markdown: everything outside inline code spans."""
    return re.sub(r"`[^`\n]*`", "", markdown)


def test_a_name_becomes_one_line_of_code_it_cannot_leave() -> None:
    rendered = code(HOSTILE)

    assert "\n" not in rendered and "\r" not in rendered
    assert rendered.startswith("`") and rendered.endswith("`")
    assert rendered.count("`") == 2
    assert "\\|" in rendered and " | " not in rendered.replace("\\|", "")
    assert outside_code(rendered) == ""


def test_bidirectional_overrides_and_separators_become_spaces() -> None:
    assert single_line("ab\u202ecd\u2028ef\u0000gh") == "ab cd ef gh"


def test_long_names_are_cut() -> None:
    assert len(code("x" * 5000)) <= 202
    assert single_line("y" * 300).endswith("…")


@pytest.mark.parametrize(
    ("run_id", "shown"),
    [("123456789", "123456789"), ("1 @victim", "`1 @victim`"), ("1\n# h", "`1 # h`")],
)
def test_run_ids_are_digits_or_code(run_id: str, shown: str) -> None:
    assert run_id_text(run_id) == shown


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "https://x.example/a\n# heading",
        "data:image/png;base64,AAAA",
        None,
        "",
    ],
)
def test_only_a_plain_web_url_becomes_a_link(url: str | None) -> None:
    assert link("run 1", url) == "run 1"


def test_a_link_cannot_close_early() -> None:
    rendered = link("run 1", "https://x.example/a)![img](https://evil.example/i.png")

    assert rendered == "[run 1](https://x.example/a%29!%5Bimg%5D%28https://evil.example/i.png)"


def test_mentions_only_name_valid_logins() -> None:
    assert mentions(["oncall1", "@oncall-2", "org/team", "bad login", "x\n# y"]) == (
        "@oncall1 @oncall-2"
    )


def test_a_commit_is_twelve_hex_digits_or_code() -> None:
    assert commit_text("ab" * 20) == "abababababab"
    assert commit_text("@victim") == "`@victim`"
