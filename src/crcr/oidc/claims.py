"""The pure rules of callback-token verification: header, times, and who the caller is.

Everything here takes values and returns values; fetching keys and checking the
signature live in `jwks.py` and `verifier.py`.
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from crcr.config.settings import OidcIssuer
from crcr.stores.keys import decode

ALLOWED_ALGORITHM = "RS256"
MAX_LEEWAY_SECONDS = 60  # SPEC §5 step 1: exp/nbf with at most 60 s leeway


class TokenRejected(Exception):
    """The callback token is not acceptable; `reason` is safe to show the caller.

    Reasons never contain the token or values taken from it, only what was wrong.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class KeysUnavailable(TokenRejected):
    """The issuer's signing keys could not be fetched, so nothing could be verified."""


@dataclass(frozen=True)
class VerifiedIdentity:
    """Who sent a callback, taken from a verified token, never from the body."""

    repo: str
    issuer_kind: Literal["github", "buildkite"]
    run_id: str | None
    claims: Mapping[str, Any] = field(repr=False)


def bearer_token(authorization: str | None) -> str:
    """Extract the token from an `Authorization: Bearer …` header value."""
    if not authorization or not authorization.strip():
        raise TokenRejected("missing Authorization header")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise TokenRejected("Authorization header is not a Bearer token")
    return token.strip()


@dataclass(frozen=True)
class UnverifiedToken:
    """A JWT split and decoded once; nothing in it is trusted until the signature is."""

    header: Mapping[str, Any]
    claims: Mapping[str, Any]
    signing_input: bytes
    signature: bytes


_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _segment(text: str) -> bytes:
    """`base64.urlsafe_b64decode` of the padded segment, its three wrappers spelled out
    (each token has three segments, on every callback); a non-ASCII segment is a
    `ValueError` (`UnicodeEncodeError`), as there. `tests/oidc/test_claims.py` holds the
    two equal."""
    return binascii.a2b_base64((text + "=" * (-len(text) % 4)).encode("ascii").translate(_URLSAFE))


def parse_token(token: str) -> UnverifiedToken:
    """Split and decode a compact JWS once, for every later check to read.

    PyJWT's `decode` parses the token anew on each call, and choosing the key takes two
    unverified reads before the verified one; the callback hot path parses it once.
    """
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenRejected("token is not a well-formed JWT")
    try:
        header = decode(_segment(parts[0]))  # orjson, on the callback's hot path
        claims = decode(_segment(parts[1]))
        signature = _segment(parts[2])
    except (ValueError, TypeError):  # binascii.Error and JSONDecodeError are ValueErrors
        raise TokenRejected("token is not a well-formed JWT") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenRejected("token is not a well-formed JWT")
    return UnverifiedToken(header, claims, f"{parts[0]}.{parts[1]}".encode(), signature)


def checked_key_id(token: UnverifiedToken) -> str:
    """Return the token's `kid` after refusing every algorithm but RS256.

    The algorithm is checked before any key is looked up, so `alg: none` and
    HS256-signed-with-the-public-key tokens never reach a verification routine.
    """
    header = token.header
    alg = header.get("alg")
    if alg != ALLOWED_ALGORITHM:
        shown = alg if isinstance(alg, str) and alg.isalnum() and len(alg) <= 10 else "?"
        raise TokenRejected(f"token algorithm {shown} is not allowed (RS256 only)")
    if "crit" in header or "b64" in header:
        # RFC 7515 §4.1.11: extensions a verifier does not understand must be refused.
        raise TokenRejected("token header uses JWS extensions this relay does not support")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise TokenRejected("token header has no key id (kid)")
    return kid


def unverified_issuer(token: UnverifiedToken) -> str:
    """Read `iss` without verifying, only to choose which trusted issuer to verify with."""
    issuer = token.claims.get("iss")
    if not isinstance(issuer, str) or not issuer:
        raise TokenRejected("token has no issuer (iss) claim")
    return issuer


def check_registered_claims(claims: Mapping[str, Any], *, issuer: str, audience: str) -> None:
    """Require `exp`, `iss` and `aud`; `iss` must be the issuer and `aud` include ours.

    The checks PyJWT's `decode` makes with `require=["exp", "iss", "aud"]`, in its order,
    on the claims of a token whose signature has been verified.
    """
    for name in ("exp", "iss", "aud"):
        if claims.get(name) is None:
            raise TokenRejected(f"token lacks the required {name} claim")
    if claims["iss"] != issuer:
        raise TokenRejected("token issuer (iss) does not match the trusted issuer")
    audiences = claims["aud"]
    if isinstance(audiences, str):
        audiences = [audiences]
    if not isinstance(audiences, list) or not audiences:
        raise TokenRejected("token lacks the required aud claim")
    if not all(isinstance(entry, str) for entry in audiences) or audience not in audiences:
        raise TokenRejected("token audience (aud) is not this relay's")
    for name in ("sub", "jti"):
        if name in claims and not isinstance(claims[name], str):
            raise TokenRejected("token is invalid")


def _timestamp(claims: Mapping[str, Any], name: str) -> int | None:
    """A NumericDate claim as PyJWT reads it (`int()`, truncating); None when absent.

    Present means checked: a null, a NaN or an infinity is no time at all (a NaN `exp`
    would never expire), so it is refused, as PyJWT refuses it. Integers are kept
    exact: one past float range must be compared, not converted (an OverflowError).
    Strings and booleans, which PyJWT would coerce, are refused.
    """
    if name not in claims:
        return None
    value = claims[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenRejected(f"token {name} claim is not a number")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TokenRejected(f"token {name} claim is not a number")
        return int(value)
    return value


def check_times(claims: Mapping[str, Any], *, now: float, leeway: float) -> None:
    """Refuse expired, not-yet-valid and future-issued tokens, allowing `leeway` seconds."""
    expires = _timestamp(claims, "exp")
    if expires is None:
        raise TokenRejected("token lacks the required exp claim")
    if expires <= now - leeway:
        raise TokenRejected("token has expired (exp)")
    not_before = _timestamp(claims, "nbf")
    if not_before is not None and not_before > now + leeway:
        raise TokenRejected("token is not valid yet (nbf)")
    issued = _timestamp(claims, "iat")
    if issued is not None and issued > now + leeway:
        raise TokenRejected("token was issued in the future (iat)")


def _text(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def buildkite_pipeline_key(claims: Mapping[str, Any]) -> str:
    """The `repo_map` key of a Buildkite token: `<organization_id>/<pipeline_id>`.

    Only the immutable UUIDs identify a pipeline. Every Buildkite organisation shares
    one issuer, and slugs can be renamed and then claimed by anyone, so a slug-keyed
    lookup would let another organisation name itself into a mapped repository. The
    IDs are optional claims a job asks for with `--claim organization_id,pipeline_id`.
    """
    org, pipeline = _text(claims, "organization_id"), _text(claims, "pipeline_id")
    if org is None or pipeline is None:
        raise TokenRejected(
            "token lacks the Buildkite organization_id and pipeline_id claims "
            "(request them with: buildkite-agent oidc request-token "
            "--claim organization_id,pipeline_id)"
        )
    return f"{org}/{pipeline}".lower()  # UUIDs, whose case carries no meaning


def identity_from_claims(issuer: OidcIssuer, claims: Mapping[str, Any]) -> VerifiedIdentity:
    """Decide which repository a verified token speaks for."""
    if issuer.kind == "github":
        repo = _text(claims, "repository")
        if repo is None or "/" not in repo:
            raise TokenRejected("token lacks the repository claim")
        return VerifiedIdentity(repo, "github", _text(claims, "run_id"), claims)

    pipeline = issuer.repo_map.get(buildkite_pipeline_key(claims))
    if pipeline is None:
        raise TokenRejected("Buildkite pipeline is not mapped to a repository")
    for name, accepted in pipeline.required_claims.items():
        actual = _text(claims, name)
        if actual is None or actual not in accepted:
            raise TokenRejected(f"token claim {name} does not meet the pipeline's requirement")
    # Buildkite tokens name the job (`job_id`) and build number but not the build's
    # UUID, so the run id is left to the callback body.
    return VerifiedIdentity(pipeline.repo, "buildkite", None, claims)
