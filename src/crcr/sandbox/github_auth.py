"""How the sandbox GitHub checks the credentials a client sends (App JWTs, tokens)."""

from __future__ import annotations

from typing import Any

import jwt
from starlette.requests import Request

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_model import ApiError

# GitHub refuses App JWTs whose expiry lies more than ten minutes ahead; the small
# allowance absorbs the client's rounding of `exp` to whole seconds.
MAX_JWT_LIFETIME = 600
CLOCK_ALLOWANCE = 30


def credential(request: Request) -> tuple[str, str]:
    """Split the Authorization header into (scheme, credential); 401 when absent."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if not value.strip():
        raise ApiError(401, "Requires authentication")
    return scheme.lower(), value.strip()


def verify_app_jwt(app: SandboxApp, token: str, now: float) -> dict[str, Any]:
    """Return the claims of a valid App JWT, or raise a 401 that says what was wrong.

    Time checks use the sandbox clock rather than PyJWT's, so tests can move time.
    """
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            app.public_key,
            algorithms=["RS256"],
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
        )
    except jwt.PyJWTError:
        raise ApiError(401, "A JSON web token could not be decoded") from None
    for claim in ("iat", "exp", "iss"):
        if claim not in claims:
            raise ApiError(401, f"Missing '{claim}' claim in the JSON web token")
    if str(claims["iss"]) != str(app.app_id):
        raise ApiError(401, "'Issuer' claim ('iss') must be the App's id")
    if not isinstance(claims["exp"], int) or not isinstance(claims["iat"], int):
        raise ApiError(401, "'exp' and 'iat' claims must be integers")
    if claims["iat"] > now + CLOCK_ALLOWANCE:
        raise ApiError(401, "'Issued at' claim ('iat') must be a time in the past")
    if claims["exp"] <= now:
        raise ApiError(401, "'Expiration time' claim ('exp') must be in the future")
    if claims["exp"] > now + MAX_JWT_LIFETIME + CLOCK_ALLOWANCE:
        raise ApiError(401, "'Expiration time' claim ('exp') is too far in the future")
    return claims
