"""OIDC token verification for downstream callbacks."""
