"""OIDC token verification for downstream callbacks."""

from crcr.oidc.claims import KeysUnavailable, TokenRejected, VerifiedIdentity
from crcr.oidc.verifier import OidcVerifier

__all__ = ["KeysUnavailable", "OidcVerifier", "TokenRejected", "VerifiedIdentity"]
