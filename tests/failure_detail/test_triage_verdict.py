"""A triage verdict is kept, truncated or dropped whole, as SPEC §11 says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crcr.failure_detail.triage_verdict import (
    MAX_BYTES,
    MAX_EVIDENCE,
    is_safe_log_url,
    sanitise_triage_verdict,
)


def verdict(**changes: Any) -> dict[str, Any]:
    """A valid verdict, with `changes` applied (a value of ... removes the key)."""
    base: dict[str, Any] = {
        "schema_version": 1,
        "category": "upstream",
        "confidence": "high",
        "summary": "aten::add broke on the new dispatch key",
        "suspected_upstream": {"pr": 12345, "commit": "abcdef1", "reason": "touches add"},
        "evidence": [
            {
                "job": "test (xpu, 1)",
                "test": "test_ops.py::test_add",
                "excerpt": "RuntimeError: no kernel",
                "log_url": "https://github.com/org/xpu/actions/runs/1/job/2",
            }
        ],
        "reproduced_on_retry": True,
        "analyzer": {"name": "triage-bot", "version": "2.1", "model": "m", "prompt_version": "7"},
        "analyzed_at": "2026-11-25T09:00:00Z",
    }
    for key, value in changes.items():
        if value is ...:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def test_a_valid_verdict_is_kept_as_given() -> None:
    result = sanitise_triage_verdict(verdict())
    assert result.reason is None
    assert result.verdict == verdict()


def test_no_verdict_is_not_a_problem() -> None:
    result = sanitise_triage_verdict(None)
    assert result.verdict is None and result.reason is None


def test_the_minimal_verdict_needs_only_version_category_confidence_summary() -> None:
    minimal = {"schema_version": "1", "category": "flake", "confidence": "low", "summary": "x"}
    result = sanitise_triage_verdict(minimal)
    assert result.verdict == {**minimal, "schema_version": 1}


def test_unknown_keys_are_dropped_everywhere() -> None:
    raw = verdict(extra="x", evidence=[{"job": "j", "colour": "red"}])
    raw["suspected_upstream"]["extra"] = 1
    raw["analyzer"]["extra"] = 2
    kept = sanitise_triage_verdict(raw).verdict
    assert kept is not None
    assert "extra" not in kept
    assert "extra" not in kept["suspected_upstream"]
    assert "extra" not in kept["analyzer"]
    assert kept["evidence"] == [{"job": "j"}]


STRUCTURAL_VIOLATIONS: list[tuple[str, object, str]] = [
    ("not an object", ["upstream"], "triage_verdict: must be an object"),
    ("schema version 2", verdict(schema_version=2), "schema_version"),
    ("schema version true", verdict(schema_version=True), "schema_version"),
    ("schema version missing", verdict(schema_version=...), "schema_version"),
    ("category unknown", verdict(category="cosmic-rays"), "category: must be one of"),
    ("category missing", verdict(category=...), "category: must be a string"),
    ("category a number", verdict(category=3), "category: must be a string"),
    ("confidence unknown", verdict(confidence="certain"), "confidence: must be one of"),
    ("summary missing", verdict(summary=...), "summary: must be a string"),
    ("summary blank", verdict(summary="   "), "summary: must not be empty"),
    ("summary a boolean", verdict(summary=True), "summary: must be a string"),
    (
        "suspected_upstream on a backend verdict",
        verdict(category="backend"),
        "only allowed with category upstream",
    ),
    ("suspected_upstream a list", verdict(suspected_upstream=[1]), "must be an object"),
    ("suspected_upstream names nothing", verdict(suspected_upstream={"reason": "x"}), "pr or a"),
    ("pr zero", verdict(suspected_upstream={"pr": 0}), "pr: must be a positive integer"),
    ("pr a string", verdict(suspected_upstream={"pr": "12"}), "pr: must be a positive"),
    ("pr true", verdict(suspected_upstream={"pr": True}), "pr: must be a positive"),
    ("commit too short", verdict(suspected_upstream={"commit": "abc12"}), "7-40 hex"),
    ("commit not hex", verdict(suspected_upstream={"commit": "zzzzzzzz"}), "7-40 hex"),
    ("commit too long", verdict(suspected_upstream={"commit": "a" * 41}), "7-40 hex"),
    ("evidence an object", verdict(evidence={"job": "j"}), "evidence: must be a list"),
    ("evidence item a string", verdict(evidence=["log"]), "evidence[0]: must be an object"),
    ("evidence test a number", verdict(evidence=[{"test": 1}]), "evidence[0].test"),
    ("log_url a number", verdict(evidence=[{"log_url": 1}]), "evidence[0].log_url"),
    ("reproduced_on_retry a string", verdict(reproduced_on_retry="yes"), "must be a boolean"),
    ("analyzer a string", verdict(analyzer="bot"), "analyzer: must be an object"),
    ("analyzer model a number", verdict(analyzer={"model": 4}), "analyzer.model"),
    ("analyzed_at not a date", verdict(analyzed_at="yesterday"), "analyzed_at: must be an ISO"),
    ("analyzed_at a number", verdict(analyzed_at=1700000000), "analyzed_at: must be a string"),
]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(raw, reason) for _, raw, reason in STRUCTURAL_VIOLATIONS],
    ids=[name for name, _, _ in STRUCTURAL_VIOLATIONS],
)
def test_a_structural_violation_drops_the_whole_verdict(raw: object, reason: str) -> None:
    result = sanitise_triage_verdict(raw)
    assert result.verdict is None
    assert result.reason is not None and reason in result.reason


TRUNCATIONS: list[tuple[str, dict[str, Any], Any, Any]] = [
    ("summary", verdict(summary="s" * 1500), ("summary",), "s" * 1000),
    (
        "suspected reason",
        verdict(suspected_upstream={"pr": 1, "reason": "r" * 400}),
        ("suspected_upstream", "reason"),
        "r" * 300,
    ),
    ("evidence job", verdict(evidence=[{"job": "j" * 250}]), ("evidence", 0, "job"), "j" * 200),
    ("evidence test", verdict(evidence=[{"test": "t" * 250}]), ("evidence", 0, "test"), "t" * 200),
    (
        "evidence excerpt",
        verdict(evidence=[{"excerpt": "e" * 1200}]),
        ("evidence", 0, "excerpt"),
        "e" * 1000,
    ),
    ("analyzer name", verdict(analyzer={"name": "n" * 250}), ("analyzer", "name"), "n" * 200),
]


@pytest.mark.parametrize(
    ("raw", "path", "expected"),
    [(raw, path, expected) for _, raw, path, expected in TRUNCATIONS],
    ids=[name for name, _, _, _ in TRUNCATIONS],
)
def test_an_overflowing_string_is_truncated(raw: dict[str, Any], path: Any, expected: str) -> None:
    kept: Any = sanitise_triage_verdict(raw).verdict
    for step in path:
        kept = kept[step]
    assert kept == expected


def test_evidence_beyond_ten_items_is_dropped_not_the_verdict() -> None:
    raw = verdict(evidence=[{"job": f"job {n}"} for n in range(25)])
    kept = sanitise_triage_verdict(raw).verdict
    assert kept is not None
    assert [item["job"] for item in kept["evidence"]] == [f"job {n}" for n in range(MAX_EVIDENCE)]


def test_an_empty_evidence_item_is_left_out() -> None:
    kept = sanitise_triage_verdict(verdict(evidence=[{}, {"job": " "}, {"job": "j"}])).verdict
    assert kept is not None and kept["evidence"] == [{"job": "j"}]


UNSAFE_LOG_URLS = [
    ("javascript", "javascript:alert(1)"),
    ("data", "data:text/html,<script>alert(1)</script>"),
    ("relative", "/org/repo/actions/runs/1"),
    ("scheme-relative", "//evil.example/log"),
    ("ftp", "ftp://example.org/log"),
    ("userinfo", "https://github.com@evil.example/log"),
    ("user and password", "https://user:pw@github.com/log"),
    ("space", "https://github.com/log file"),
    ("newline", "https://github.com/log\n[click](https://evil.example)"),
    ("tab", "https://github.com/\tlog"),
    ("NUL", "https://github.com/log\x00"),
    ("DEL", "https://github.com/log\x7f"),
    ("C1 control", "https://github.com/log\x85"),
    ("no host", "https:///path"),
    ("over-long", "https://github.com/" + "a" * 490),
    ("bad port", "https://github.com:99999999/x"),
]


@pytest.mark.parametrize(
    "url", [url for _, url in UNSAFE_LOG_URLS], ids=[n for n, _ in UNSAFE_LOG_URLS]
)
def test_an_unsafe_log_url_drops_the_whole_verdict(url: str) -> None:
    """As the reference does: a verdict carrying a smuggled link is not to be trusted at all."""
    assert not is_safe_log_url(url)
    result = sanitise_triage_verdict(verdict(evidence=[{"job": "j", "log_url": url}]))
    assert result.verdict is None
    assert result.reason is not None and "evidence[0].log_url" in result.reason


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/org/repo/actions/runs/1/job/2",
        "http://ci.example.org:8080/logs?id=3#L10",
        "HTTPS://GitHub.com/x",
        "https://github.com/" + "a" * 481,
    ],
)
def test_a_plain_http_url_is_kept(url: str) -> None:
    assert is_safe_log_url(url)
    kept = sanitise_triage_verdict(verdict(evidence=[{"log_url": url}])).verdict
    assert kept is not None and kept["evidence"] == [{"log_url": url}]


def test_the_whole_object_is_capped_at_16_kb() -> None:
    raw = verdict()
    raw["padding"] = ""
    room = MAX_BYTES - len(json.dumps(raw, separators=(",", ":")).encode())
    raw["padding"] = "p" * room
    assert sanitise_triage_verdict(raw).verdict is not None
    raw["padding"] += "p"
    result = sanitise_triage_verdict(raw)
    assert result.verdict is None
    assert result.reason is not None and "16384-byte limit" in result.reason


def test_the_size_counts_utf8_bytes_not_characters() -> None:
    raw = verdict(summary="é" * 9000)  # 9000 characters, 18000 bytes
    assert sanitise_triage_verdict(raw).verdict is None


def test_sanitising_twice_changes_nothing() -> None:
    once = sanitise_triage_verdict(verdict(summary="s" * 2000, schema_version="1")).verdict
    assert sanitise_triage_verdict(once).verdict == once


@pytest.mark.parametrize("depth", [990, 1_000, 5_000])
def test_a_verdict_nested_past_the_stack_is_dropped_not_raised(depth: int) -> None:
    deep: Any = []
    for _ in range(depth):
        deep = [deep]
    result = sanitise_triage_verdict(verdict(deep=deep))
    assert result.verdict is None
    assert result.reason is not None and "nested deeper than" in result.reason


def test_format_characters_are_stripped_from_the_verdicts_text() -> None:
    raw = verdict(summary="looks \u202eupstream\u200b", evidence=[{"test": "t\u2066x"}])
    kept = sanitise_triage_verdict(raw).verdict
    assert kept is not None
    assert kept["summary"] == "looks upstream"
    assert kept["evidence"] == [{"test": "tx"}]
