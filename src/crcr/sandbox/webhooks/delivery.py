"""Sign and deliver webhooks the way GitHub's Hookshot does."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx

USER_AGENT = "GitHub-Hookshot/8e8f4a1"
HOOK_ID = "512345678"


def _key(secret: str | bytes) -> bytes:
    return secret.encode() if isinstance(secret, str) else secret


def sign(body: bytes, secret: str | bytes) -> str:
    """The `X-Hub-Signature-256` value: `sha256=` + hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(_key(secret), body, hashlib.sha256).hexdigest()


def sign_sha1(body: bytes, secret: str | bytes) -> str:
    """The legacy `X-Hub-Signature` value GitHub still sends alongside."""
    return "sha1=" + hmac.new(_key(secret), body, hashlib.sha1).hexdigest()


def encode_payload(payload: Mapping[str, Any]) -> bytes:
    """Serialise a payload as GitHub does: compact JSON, UTF-8, non-ASCII kept."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class WebhookDelivery:
    """One delivery: the exact body bytes and the headers GitHub sends with them."""

    event: str
    delivery_id: str
    body: bytes
    headers: Mapping[str, str]

    @classmethod
    def build(
        cls,
        event: str,
        payload: Mapping[str, Any],
        secret: str | bytes,
        *,
        delivery_id: str | None = None,
        installation_target_id: int = 1,
    ) -> WebhookDelivery:
        """Serialise and sign `payload`; a redelivery reuses the `delivery_id`."""
        body = encode_payload(payload)
        delivery_id = delivery_id or str(uuid.uuid4())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id,
            "X-GitHub-Hook-ID": HOOK_ID,
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(installation_target_id),
            "X-Hub-Signature": sign_sha1(body, secret),
            "X-Hub-Signature-256": sign(body, secret),
        }
        return cls(event=event, delivery_id=delivery_id, body=body, headers=headers)

    def with_headers(self, **changes: str | None) -> WebhookDelivery:
        """A copy with headers replaced; `None` removes one (for negative tests).

        Keyword names use underscores for dashes: `X_Hub_Signature_256=None`.
        """
        headers = dict(self.headers)
        for name, value in changes.items():
            header = name.replace("_", "-")
            if value is None:
                headers.pop(header, None)
            else:
                headers[header] = value
        return replace(self, headers=headers)

    def with_body(self, body: bytes) -> WebhookDelivery:
        """A copy with other body bytes but the original signature (a tampered delivery)."""
        return replace(self, body=body)


async def send(client: httpx.AsyncClient, url: str, delivery: WebhookDelivery) -> httpx.Response:
    """POST the delivery to `url` and return the receiver's response."""
    return await client.post(url, content=delivery.body, headers=dict(delivery.headers))
