"""The sandbox GitHub App's identity: its id, slug and freshly generated RSA key pair."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


@dataclass(frozen=True)
class SandboxApp:
    """A GitHub App as the sandbox knows it; the private key is what a relay signs with."""

    app_id: int
    slug: str
    private_key_pem: str
    public_key: rsa.RSAPublicKey

    @classmethod
    def generate(cls, app_id: int | None = None, slug: str = "crcr-sandbox") -> SandboxApp:
        """Create an App with a new 2048-bit RSA key (GitHub issues RSA keys of this size)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode()
        chosen_id = app_id if app_id is not None else 100_000 + secrets.randbelow(900_000)
        return cls(app_id=chosen_id, slug=slug, private_key_pem=pem, public_key=key.public_key())

    def write_private_key(self, path: Path) -> Path:
        """Write the private key PEM readable by its owner only, and return the path."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(self.private_key_pem)
        return path

    def __repr__(self) -> str:
        return f"SandboxApp(app_id={self.app_id}, slug={self.slug!r}, private_key_pem='***')"
