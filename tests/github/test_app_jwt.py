"""The App JWT is signed once and reused until a minute before it expires."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from crcr.github.app_jwt import AppJwtSigner
from crcr.github.errors import GitHubAuthError
from crcr.sandbox.github_identity import SandboxApp

from .conftest import Clock


def test_the_token_is_signed_once_and_reused(app_identity: SandboxApp, clock: Clock) -> None:
    signer = AppJwtSigner("31337", app_identity.private_key_pem, clock=clock)

    tokens = {signer.token() for _ in range(100)}

    assert len(tokens) == 1
    assert signer.signatures_made == 1


def test_the_claims_span_ten_minutes_from_a_backdated_iat(
    app_identity: SandboxApp, clock: Clock
) -> None:
    signer = AppJwtSigner("31337", app_identity.private_key_pem, clock=clock)

    claims = jwt.decode(
        signer.token(), app_identity.public_key, algorithms=["RS256"], options={"verify_exp": False}
    )

    assert claims["iss"] == "31337"
    assert claims["iat"] == int(clock.now) - 60
    assert claims["exp"] - claims["iat"] == 600
    assert jwt.get_unverified_header(signer.token())["alg"] == "RS256"


def test_a_new_token_is_signed_a_minute_before_expiry(
    app_identity: SandboxApp, clock: Clock
) -> None:
    signer = AppJwtSigner("31337", app_identity.private_key_pem, clock=clock)
    first = signer.token()

    clock.now += 479
    still_first = signer.token()
    clock.now += 2
    second = signer.token()

    assert still_first == first
    assert second != first
    assert signer.signatures_made == 2


def test_an_unreadable_key_is_an_auth_error_that_does_not_quote_it() -> None:
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        "c2VjcmV0LWtleS1tYXRlcmlhbA==\n"
        "-----END RSA PRIVATE KEY-----\n"
    )

    with pytest.raises(GitHubAuthError) as caught:
        AppJwtSigner("1", pem)

    assert "not a readable PEM key" in str(caught.value)
    assert "c2VjcmV0" not in str(caught.value)


def test_a_non_rsa_key_is_refused() -> None:
    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )

    with pytest.raises(GitHubAuthError, match="not RSA"):
        AppJwtSigner("1", pem)


def test_the_repr_never_shows_the_key(app_identity: SandboxApp) -> None:
    signer = AppJwtSigner("31337", app_identity.private_key_pem)

    assert "PRIVATE" not in repr(signer)
