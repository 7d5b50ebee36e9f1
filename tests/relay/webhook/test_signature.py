"""The webhook signature: present, well-formed and matching, or refused."""

import pytest

from crcr.relay.webhook.signature import (
    SignatureCheck,
    SignatureMismatch,
    SignatureMissing,
    sign_body,
    verify_signature,
)

SECRET = b"It's a Secret to Everybody"
NOT_A_DIGEST = "X-Hub-Signature-256 header must be sha256= and 64 hex digits (lower case)"
BODY = b"Hello, World!"


def test_githubs_documented_example_signature_is_accepted() -> None:
    # The example from GitHub's "Validating webhook deliveries" documentation.
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign_body(SECRET, BODY) == expected
    verify_signature(SECRET, BODY, expected)


@pytest.mark.parametrize("header", [None, "", "sha1=abc", "757107ea"])
def test_a_missing_or_malformed_header_is_missing(header: str | None) -> None:
    with pytest.raises(SignatureMissing):
        verify_signature(SECRET, BODY, header)


def test_a_signature_of_another_body_or_secret_is_a_mismatch() -> None:
    with pytest.raises(SignatureMismatch):
        verify_signature(SECRET, BODY + b" ", sign_body(SECRET, BODY))
    with pytest.raises(SignatureMismatch):
        verify_signature(b"other", BODY, sign_body(SECRET, BODY))


def test_a_body_checked_in_chunks_gets_the_same_verdict() -> None:
    body = b'{"action": "opened"}' * 1000
    check = SignatureCheck(b"secret", sign_body(b"secret", body))
    for start in range(0, len(body), 777):
        check.update(body[start : start + 777])
    check.verify()

    tampered = SignatureCheck(b"secret", sign_body(b"secret", body))
    tampered.update(body + b" ")
    with pytest.raises(SignatureMismatch):
        tampered.verify()


@pytest.mark.parametrize("header", [None, "", "sha1=abc", "x"])
def test_an_unsigned_request_is_refused_before_its_body_is_read(header: str | None) -> None:
    with pytest.raises(SignatureMissing):
        SignatureCheck(b"secret", header)


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (None, "missing X-Hub-Signature-256 header (expected sha256=<64 hex digits>)"),
        ("", "missing X-Hub-Signature-256 header (expected sha256=<64 hex digits>)"),
        (
            "SHA256=" + "a" * 64,
            "X-Hub-Signature-256 header must start with 'sha256=' (lower case), got 'SHA256='",
        ),
        (
            "sha1=" + "a" * 40,
            "X-Hub-Signature-256 header must start with 'sha256=' (lower case), got 'sha1='",
        ),
        ("757107ea", "X-Hub-Signature-256 header must start with 'sha256=' (lower case)"),
        ("sha256=xyz", NOT_A_DIGEST),
        ("sha256=" + "A" * 64, NOT_A_DIGEST),
    ],
)
def test_a_malformed_header_is_refused_saying_what_is_wrong(
    header: str | None, problem: str
) -> None:
    # Issue 33 item 25: an upper-case prefix was answered "missing header".
    with pytest.raises(SignatureMissing) as refused:
        SignatureCheck(SECRET, header)
    assert str(refused.value) == problem
