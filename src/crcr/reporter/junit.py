"""Read failed tests and counts from a JUnit XML report (pytest, ctest, gtest and kin).

The report is written by the downstream's own test run, which may run code from the
pull request under test, so it is parsed as hostile: no DTDs, no entities (a
"billion laughs" file would otherwise exhaust the runner's memory, an external entity
would read its files). The reporter runs on the runner's bare `python3` (SPEC §8), so
this is done with the standard library's expat, driven directly, every DTD and entity
declaration refused; the caller bounds the file's size (`MAX_REPORT_BYTES`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

MESSAGE_TAIL = 2000
MAX_REPORT_BYTES = 64 * 1024 * 1024
"""Larger than any real JUnit report (PyTorch's biggest shards write a few MB)."""


class JUnitError(ValueError):
    """The file is not a JUnit report we can read safely; the message says why."""


@dataclass
class JUnitSummary:
    """Counts and failed tests found in one JUnit report."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failed_tests: list[dict[str, str]] = field(default_factory=list)


DECLARATIONS_REFUSED = "DTDs and entity declarations are not accepted in a JUnit report"


def _refuse_declarations(*_: Any) -> int:
    raise JUnitError(DECLARATIONS_REFUSED)


def parse_without_dtd(data: bytes) -> ET.Element:
    """Parse XML with the standard library's expat, refusing any DOCTYPE or entity."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse_declarations
    parser.EntityDeclHandler = _refuse_declarations
    parser.UnparsedEntityDeclHandler = _refuse_declarations
    parser.ExternalEntityRefHandler = _refuse_declarations
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise JUnitError(f"not well-formed XML ({exc})") from None
    return builder.close()


def _test_name(case: ET.Element) -> str:
    """`classname.name` (gtest's `Suite.Test`), or the bare name when they coincide (ctest)."""
    name = (case.get("name") or "").strip()
    classname = (case.get("classname") or "").strip()
    if classname and classname != name:
        return f"{classname}.{name}"
    return name


def _failure_entry(case: ET.Element, failure: ET.Element) -> dict[str, str]:
    entry = {"name": _test_name(case)}
    if case.get("file"):
        entry["file"] = str(case.get("file"))
    message = (failure.get("message") or "").strip() or (failure.text or "").strip()
    if not message:
        # ctest leaves the failure empty and puts the test's output beside it; its
        # last lines are where a failure says what went wrong.
        message = (case.findtext("system-out") or "").strip()[-MESSAGE_TAIL:]
    if message:
        entry["message"] = message
    return entry


def read_junit(data: bytes) -> JUnitSummary:
    """Count every `<testcase>` and list the failed ones (`<failure>` or `<error>`)."""
    root = parse_without_dtd(data)
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitError(f"the root element is <{root.tag}>, not <testsuites> or <testsuite>")
    summary = JUnitSummary()
    for case in root.iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is not None:
            summary.failed += 1
            summary.failed_tests.append(_failure_entry(case, failure))
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            summary.skipped += 1
        else:
            summary.passed += 1
    return summary
