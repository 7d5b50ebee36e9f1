"""The alert issue's words (SPEC §13): only valid logins are mentioned, only web URLs linked."""

from __future__ import annotations

from crcr.relay.alerts.issues import (
    concerns_issues,
    issue_body,
    issue_marker,
    issue_title,
    recovery_comment,
)

ALERT = {"kind": "backend_state", "repo": "org/xpu", "from": "passing", "to": "failing"}


def test_the_body_mentions_valid_oncalls_only_and_links_only_a_web_url() -> None:
    alert = {**ALERT, "at": "2026-11-28T00:00:00Z\n# heading", "url": "javascript:alert(1)"}
    body = issue_body("org/xpu", alert, ("ada", "bad login\n@everyone", "lin-x"))
    assert body.startswith(issue_marker("org/xpu") + "\n")
    assert "Oncalls: @ada @lin-x" in body and "everyone" not in body
    assert "javascript" not in body and "\n# heading" not in body
    linked = issue_body("org/xpu", {**ALERT, "url": "https://hud.example.org/crcr/org/xpu"}, ())
    assert "[Its page on the HUD](https://hud.example.org/crcr/org/xpu)" in linked
    assert "The allowlist names no oncalls for it." in linked


def test_the_title_and_the_closing_comment_say_what_happened() -> None:
    assert issue_title("org/xpu") == "[CRCR] org/xpu is failing"
    comment = recovery_comment("org/xpu", "passing", "2026-11-28T01:00:00Z")
    assert comment.startswith("`org/xpu` recovered: it is `passing` again")


def test_only_entering_or_leaving_failing_concerns_an_issue() -> None:
    assert concerns_issues(ALERT)
    assert concerns_issues({**ALERT, "from": "failing", "to": "flaky"})
    assert not concerns_issues({**ALERT, "from": "passing", "to": "stale"})
    assert not concerns_issues({**ALERT, "kind": "canary", "to": "failing"})
