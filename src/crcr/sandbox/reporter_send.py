"""The reporter's `Send` over an httpx client, for the sandbox's simulated CI and its tests.

The reporter itself talks through `urllib` (it must run on a bare runner, SPEC §8); the
simulated jobs share one pooled httpx client, which tests point at in-process apps, and
still run the reporter's own retry, token and verdict code through this adapter.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from crcr.reporter.transport import Answer, NetworkError, Send


def httpx_send(client: httpx.AsyncClient) -> Send:
    """A `Send` making each request with `client` (its redirects are never followed)."""

    async def send(method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> Answer:
        try:
            response = await client.request(
                method, url, headers=dict(headers), content=body, follow_redirects=False
            )
        except httpx.TransportError as exc:
            raise NetworkError(type(exc).__name__, str(exc)) from None
        return Answer(response.status_code, response.text, dict(response.headers))

    return send
