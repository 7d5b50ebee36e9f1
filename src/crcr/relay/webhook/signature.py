"""Webhook signature check (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body)."""

from __future__ import annotations

import hashlib
import hmac
import re

HEADER = "X-Hub-Signature-256"
PREFIX = "sha256="
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
_SHOWN_PREFIX = re.compile(r"[A-Za-z0-9-]{1,10}=")


class SignatureMissing(Exception):
    """No `X-Hub-Signature-256` header, or not of the `sha256=<hex>` form (400)."""


class SignatureMismatch(Exception):
    """The signature does not match the body and secret (401)."""


def sign_body(secret: bytes, body: bytes) -> str:
    """Return the header value GitHub sends for `body`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify_signature(secret: bytes, body: bytes, header: str | None) -> None:
    """Raise unless `header` is GitHub's signature of `body`, compared in constant time."""
    check = SignatureCheck(secret, header)
    check.update(body)
    check.verify()


class SignatureCheck:
    """The signature of a body read in chunks: checked as it streams in, not after.

    The header's form is checked first, so an unsigned request is refused before its
    body is read at all.
    """

    def __init__(self, secret: bytes, header: str | None) -> None:
        header = (header or "").strip()
        problem = header_problem(header)
        if problem is not None:
            raise SignatureMissing(problem)
        self._expected = header.encode()
        self._mac = hmac.new(secret, digestmod=hashlib.sha256)

    def update(self, chunk: bytes) -> None:
        """Add the next chunk of the body."""
        self._mac.update(chunk)

    def verify(self) -> None:
        """Raise `SignatureMismatch` unless the body so far is the one signed."""
        actual = ("sha256=" + self._mac.hexdigest()).encode()
        if not hmac.compare_digest(actual, self._expected):
            raise SignatureMismatch("X-Hub-Signature-256 does not match the body")


def header_problem(header: str) -> str | None:
    """What is wrong with the header's form, in words for GitHub's delivery log; None if fine.

    GitHub sends `sha256=` and a lower-case hex digest; anything else (an upper-cased
    prefix from a proxy or a hand-written client, an old `sha1=`) is named, never
    answered "missing". Only a prefix that looks like one is echoed: never the digest.
    """
    if not header:
        return f"missing {HEADER} header (expected {PREFIX}<64 hex digits>)"
    if not header.startswith(PREFIX):
        shown = _SHOWN_PREFIX.match(header)
        got = f", got {shown.group(0)!r}" if shown else ""
        return f"{HEADER} header must start with {PREFIX!r} (lower case){got}"
    if not _HEX_DIGEST.fullmatch(header[len(PREFIX) :]):
        return f"{HEADER} header must be {PREFIX} and 64 hex digits (lower case)"
    return None
