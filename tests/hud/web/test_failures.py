"""How failure detail reads on the pages: the PR page's lead line, marks, the downstream's claim."""

from __future__ import annotations

from typing import Any

import pytest

from crcr.hud.web.failures import (
    MARKS,
    FailingJob,
    claim,
    confirmation_text,
    lead_line,
    mark,
)

NORTHWIND, ACME, ZETA = "northwind/xpu-backend", "acme/rocm", "zeta/npu"


def test_the_lead_line_names_new_failures_and_counts_those_already_failing_on_main() -> None:
    line = lead_line(
        [
            FailingJob(NORTHWIND, "failure", "new"),
            FailingJob(NORTHWIND, "failure", "already_failing"),
            FailingJob(ACME, "failure", "already_failing"),
            FailingJob(ZETA, "success", None),
        ]
    )

    assert line.text == (
        "2 backends fail: 1 new failure (northwind/xpu-backend), "
        "1 already failing on main (acme/rocm)"
    )
    assert line.tone == "bad"


def test_without_a_new_failure_the_line_is_a_warning_and_says_what_cannot_be_compared() -> None:
    line = lead_line([FailingJob(ACME, "timed_out", "unknown")])

    assert line.text == "1 backend fails: 1 with no result from main to compare (acme/rocm)"
    assert line.tone == "warn"


def test_a_flaky_job_is_mentioned_but_does_not_make_its_backend_fail() -> None:
    line = lead_line(
        [FailingJob(ACME, "success", "flaky"), FailingJob(ZETA, "success", None)], running=2
    )

    assert line.text == (
        "No backend fails (2 backends reported) · 1 flaky job passed on re-run "
        "· 2 jobs still running"
    )
    assert line.tone == "running"


def test_every_verdict_has_a_symbol_and_words_not_only_a_colour() -> None:
    symbols = {m.symbol for m in MARKS.values()}

    assert len(symbols) == len(MARKS) == 4
    assert all(m.short and m.long and m.tone for m in MARKS.values())
    assert mark(None) is None and mark("new") is MARKS["new"]


VERDICT: dict[str, Any] = {
    "schema_version": 1,
    "category": "upstream",
    "confidence": "high",
    "summary": "Broken by the conv rewrite",
    "suspected_upstream": {"pr": 77, "commit": "abcdef1234567"},
    "evidence": [
        {"job": "test", "test": "test_conv", "log_url": "https://ci.example/log/1"},
        {"job": "lint", "log_url": "javascript:alert(1)", "excerpt": "E: boom"},
    ],
    "analyzer": {"name": "triage-bot", "version": "2.1"},
}


def test_a_claim_that_names_the_pr_under_test_suspects_this_pr() -> None:
    shown = claim(VERDICT, 77)

    assert shown is not None
    assert shown.suspects_this_pr and shown.suspected == "PR #77 and commit abcdef123456"
    assert (shown.category, shown.confidence, shown.analyzer) == (
        "upstream",
        "high",
        "triage-bot 2.1",
    )


def test_a_claim_about_another_pr_does_not_suspect_this_one() -> None:
    shown = claim(VERDICT, 78)

    assert shown is not None and not shown.suspects_this_pr


def test_only_safe_evidence_links_are_linked() -> None:
    shown = claim(VERDICT, 77)

    assert shown is not None
    assert [(e.label, e.log_url) for e in shown.evidence] == [
        ("test · test_conv", "https://ci.example/log/1"),
        ("lint", None),
    ]


def test_no_verdict_shows_no_claim() -> None:
    assert claim(None, 1) is None and claim({}, 1) is None


@pytest.mark.parametrize(
    ("confirmed", "github", "expected"),
    [
        (None, None, None),
        (True, "success", "confirmed by GitHub"),
        (False, "failure", "contradicted: GitHub says failure"),
        (False, None, "contradicted: GitHub says no conclusion"),
    ],
)
def test_what_github_said_of_the_reported_conclusion(
    confirmed: bool | None, github: str | None, expected: str | None
) -> None:
    assert confirmation_text(confirmed, github) == expected
