"""Webhook signature check (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body)."""

from __future__ import annotations

import hashlib
import hmac


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
        if not header or not header.startswith("sha256="):
            raise SignatureMissing("missing X-Hub-Signature-256 header (expected sha256=<hex>)")
        self._expected = header.strip().encode()
        self._mac = hmac.new(secret, digestmod=hashlib.sha256)

    def update(self, chunk: bytes) -> None:
        """Add the next chunk of the body."""
        self._mac.update(chunk)

    def verify(self) -> None:
        """Raise `SignatureMismatch` unless the body so far is the one signed."""
        actual = ("sha256=" + self._mac.hexdigest()).encode()
        if not hmac.compare_digest(actual, self._expected):
            raise SignatureMismatch("X-Hub-Signature-256 does not match the body")
