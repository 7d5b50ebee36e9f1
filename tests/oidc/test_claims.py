"""The claim checks never accept a token PyJWT's `jwt.decode` refuses, and never crash.

A property test: hypothesis builds `exp` / `nbf` / `iat` from every JSON value that can
sit there (absent, null, NaN, infinities, floats, integers far past 64 bits and float
range, booleans, strings), PyJWT signs the token and judges it with the options the
relay means (RS256, issuer, audience, 60 s leeway, `exp`/`iss`/`aud` required), and
crcr's own path (`parse_token`, `check_registered_claims`, `check_times`) must agree
wherever it accepts. crcr may be stricter (it refuses numeric strings and booleans,
which PyJWT reads through `int()`); it must never be looser, and its only exception is
`TokenRejected`. Issue 33 item 23: a NaN `exp` never expired, a null `nbf` was ignored,
and an integer past float range was a 500.
"""

from __future__ import annotations

import base64
import math
import time
from typing import Any

import jwt
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crcr.oidc.claims import (
    MAX_LEEWAY_SECONDS,
    TokenRejected,
    _segment,
    check_registered_claims,
    check_times,
    parse_token,
)
from crcr.sandbox.oidc_issuer import SigningKey

ISSUER = "https://token.actions.githubusercontent.com"
AUDIENCE = "pytorch-cross-repo-ci-relay"
ABSENT = object()
KEY = SigningKey.generate()
PUBLIC_KEY = KEY.private_key.public_key()

NOW = time.time()


def offsets() -> st.SearchStrategy[Any]:
    """Times near now (both sides of the leeway), and far from it."""
    near = st.integers(-2 * MAX_LEEWAY_SECONDS, 2 * MAX_LEEWAY_SECONDS)
    return st.one_of(
        near.map(lambda d: int(NOW) + d),
        st.floats(-150, 150).map(lambda d: NOW + d),
        st.integers(-(2**70), 2**70),
        st.integers(10**308, 10**400),
        st.integers(-(10**400), -(10**308)),
    )


CLAIM_VALUES = st.one_of(
    st.just(ABSENT),
    st.none(),
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.booleans(),
    offsets(),
    offsets().map(str),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _claims(exp: Any, nbf: Any, iat: Any) -> dict[str, Any]:
    claims: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": "repo:o/r:ref:main"}
    for name, value in (("exp", exp), ("nbf", nbf), ("iat", iat)):
        if value is not ABSENT:
            claims[name] = value
    return claims


def crcr_accepts(token: str, now: float) -> bool:
    try:
        parsed = parse_token(token)
        check_registered_claims(parsed.claims, issuer=ISSUER, audience=AUDIENCE)
        check_times(parsed.claims, now=now, leeway=MAX_LEEWAY_SECONDS)
    except TokenRejected:
        return False
    return True


def pyjwt_accepts(token: str) -> bool:
    try:
        jwt.decode(
            token,
            PUBLIC_KEY,
            algorithms=["RS256"],
            audience=AUDIENCE,
            issuer=ISSUER,
            leeway=MAX_LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud"]},
        )
    except (jwt.PyJWTError, TypeError, ValueError, OverflowError):
        # PyJWT at our floor (2.10.1) meets a null, NaN or infinite time with int(): a
        # refusal all the same, only not in its own exception (later versions raise
        # DecodeError).
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exp=CLAIM_VALUES, nbf=CLAIM_VALUES, iat=CLAIM_VALUES)
@example(exp=math.nan, nbf=ABSENT, iat=ABSENT)
@example(exp=int(NOW) + 3600, nbf=None, iat=ABSENT)
@example(exp=int(NOW) + 3600, nbf=ABSENT, iat=None)
@example(exp=10**400, nbf=ABSENT, iat=ABSENT)
@example(exp=int(NOW) + 3600, nbf=-(10**400), iat=10**400)
@example(exp=NOW - MAX_LEEWAY_SECONDS + 0.5, nbf=ABSENT, iat=ABSENT)
def test_the_claim_checks_are_never_looser_than_pyjwt(exp: Any, nbf: Any, iat: Any) -> None:
    token = jwt.encode(
        _claims(exp, nbf, iat), KEY.private_key, algorithm="RS256", headers={"kid": KEY.kid}
    )

    # The two read the clock at different moments: crcr must accept at both ends of
    # PyJWT's reading for the comparison to say anything (each check is monotonic).
    before = time.time()
    theirs = pyjwt_accepts(token)
    after = time.time()
    ours = crcr_accepts(token, before) and crcr_accepts(token, after)

    assert not ours or theirs, f"crcr accepted what PyJWT refuses: {exp=} {nbf=} {iat=}"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": math.nan}, "token exp claim is not a number"),
        ({"exp": math.inf}, "token exp claim is not a number"),
        ({"exp": 10**400, "nbf": None}, "token nbf claim is not a number"),
        ({"exp": 10**400, "iat": math.nan}, "token iat claim is not a number"),
        ({"exp": 10**400, "nbf": 10**400}, "token is not valid yet (nbf)"),
        ({"exp": -(10**400)}, "token has expired (exp)"),
    ],
)
def test_a_time_that_is_no_time_is_refused_by_name(claims: dict[str, Any], reason: str) -> None:
    with pytest.raises(TokenRejected) as refused:
        check_times(claims, now=NOW, leeway=MAX_LEEWAY_SECONDS)
    assert refused.value.reason == reason


def test_an_expiry_far_past_float_range_is_in_time() -> None:
    check_times({"exp": 10**400, "iat": -(10**400)}, now=NOW, leeway=MAX_LEEWAY_SECONDS)


@given(st.one_of(st.text(), st.text(alphabet="ABCxyz019-_+/=.é \n", max_size=40)))
@example("")
@example("eyJhbGciOiJSUzI1NiJ9")
@example("a")  # one character: no padding makes it whole
@example("ab-_")
def test_segment_decodes_as_urlsafe_b64decode(text: str) -> None:
    """The token segment decoder, spelled out for speed, equals the standard library's
    `urlsafe_b64decode` of the padded segment: the same bytes, or a `ValueError` both."""
    padded = text + "=" * (-len(text) % 4)
    try:
        expected: bytes | None = base64.urlsafe_b64decode(padded)
    except ValueError:
        expected = None
    try:
        actual: bytes | None = _segment(text)
    except ValueError:
        actual = None
    assert actual == expected
