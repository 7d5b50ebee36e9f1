"""JUnit reports as pytest, ctest and gtest write them, read safely."""

from __future__ import annotations

from pathlib import Path

import pytest

from crcr.reporter.junit import JUnitError, parse_without_dtd, read_junit

FIXTURES = Path(__file__).parents[1] / "fixtures" / "reporter" / "junit"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_pytest_xunit1_names_the_file_and_the_assertion() -> None:
    summary = read_junit(fixture("pytest_xunit1.xml"))
    assert (summary.passed, summary.failed, summary.skipped) == (1, 2, 1)
    assert summary.failed_tests == [
        {
            "name": "test_ops.test_mul",
            "file": "test_ops.py",
            "message": "AssertionError: mul is off\nassert (2 * 3) == 7",
        },
        {
            "name": "test_ops.TestConv.test_conv2d",
            "file": "test_ops.py",
            "message": "RuntimeError: no kernel for conv2d on xpu",
        },
    ]


def test_pytest_xunit2_has_no_file() -> None:
    summary = read_junit(fixture("pytest_xunit2.xml"))
    assert [t["name"] for t in summary.failed_tests] == [
        "test_ops.test_mul",
        "test_ops.TestConv.test_conv2d",
    ]
    assert all("file" not in t for t in summary.failed_tests)


def test_ctest_failures_take_their_message_from_the_output() -> None:
    summary = read_junit(fixture("ctest.xml"))
    assert (summary.passed, summary.failed, summary.skipped) == (1, 1, 1)
    assert summary.failed_tests == [
        {"name": "test_conv_backward", "message": "conv backward mismatch"}
    ]


def test_gtest_names_are_suite_dot_test() -> None:
    summary = read_junit(fixture("gtest.xml"))
    assert (summary.passed, summary.failed, summary.skipped) == (2, 1, 1)
    (failed,) = summary.failed_tests
    assert failed["name"] == "TensorTest.MatmulOnDevice"
    assert failed["file"] == "test/tensor_test.cc"
    assert failed["message"].startswith("test/tensor_test.cc:40\nExpected equality")


def test_an_error_counts_as_a_failure() -> None:
    xml = b'<testsuite><testcase classname="c" name="t"><error message="boom"/></testcase>'
    xml += b"</testsuite>"
    assert read_junit(xml).failed_tests == [{"name": "c.t", "message": "boom"}]


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<testsuite><testcase name="t"><failure message="&lol3;"/></testcase></testsuite>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<testsuite><testcase name="t"><failure message="&secret;"/></testcase></testsuite>"""

BARE_DOCTYPE = b"""<?xml version="1.0"?><!DOCTYPE testsuite SYSTEM "junit.dtd"><testsuite/>"""


@pytest.mark.parametrize(
    "hostile",
    [BILLION_LAUGHS, EXTERNAL_ENTITY, BARE_DOCTYPE],
    ids=["billion-laughs", "external-entity", "doctype"],
)
def test_dtds_and_entities_are_refused(hostile: bytes) -> None:
    with pytest.raises(JUnitError, match="DTDs and entity declarations are not accepted"):
        parse_without_dtd(hostile)


def test_an_undeclared_entity_is_refused_as_malformed() -> None:
    with pytest.raises(JUnitError, match="not well-formed XML"):
        parse_without_dtd(b"<testsuite><testcase name='&lol;'/></testsuite>")


def test_the_standard_library_parser_reads_the_tree() -> None:
    root = parse_without_dtd(fixture("gtest.xml"))
    assert [case.get("name") for case in root.iter("testcase")] == [
        "Add",
        "MatmulOnDevice",
        "DISABLED_Fft",
        "Enumerate",
    ]


def test_malformed_xml_is_named() -> None:
    with pytest.raises(JUnitError, match="not well-formed XML"):
        parse_without_dtd(b"<testsuite><testcase></testsuite>")


def test_a_document_that_is_not_junit_is_refused() -> None:
    with pytest.raises(JUnitError, match="the root element is <html>"):
        read_junit(b"<html><body/></html>")
