"""The GitHub App's JWT: the key parsed once, one signature reused until near expiry."""

from __future__ import annotations

import time
from collections.abc import Callable

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from crcr.github.errors import GitHubAuthError

# GitHub rejects App JWTs that expire more than 10 minutes ahead. `iat` is backdated by
# 60 s against clock drift (GitHub's advice), so the token spans exactly 10 minutes.
BACKDATE_SECONDS = 60
LIFETIME_SECONDS = 540
RENEW_BEFORE_EXPIRY = 60


def load_private_key(pem: str) -> rsa.RSAPrivateKey:
    """Parse the App's PEM; the error never quotes the key."""
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise GitHubAuthError(
            "sign App JWT", None, "the GitHub App private key is not a readable PEM key"
        ) from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise GitHubAuthError("sign App JWT", None, "the GitHub App private key is not RSA")
    return key


class AppJwtSigner:
    """Sign App JWTs (RS256) and hand out the same one until a minute before it expires."""

    def __init__(
        self, app_id: str, private_key_pem: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        # `iss` is a string: PyJWT ≥ 2.10 insists on it, and GitHub accepts either form.
        self.app_id = str(app_id)
        self._key = load_private_key(private_key_pem)
        self._clock = clock
        self._token = ""
        self._expires_at = 0.0
        self.signatures_made = 0

    def token(self) -> str:
        """A valid App JWT, re-signed only when the current one is about to expire."""
        now = self._clock()
        if now < self._expires_at - RENEW_BEFORE_EXPIRY:
            return self._token
        issued = int(now) - BACKDATE_SECONDS
        expires = int(now) + LIFETIME_SECONDS
        self._token = jwt.encode(
            {"iat": issued, "exp": expires, "iss": self.app_id}, self._key, algorithm="RS256"
        )
        self._expires_at = float(expires)
        self.signatures_made += 1
        return self._token

    def __repr__(self) -> str:
        return f"AppJwtSigner(app_id={self.app_id!r})"
