"""Tell the HUD which backends a PR head skipped by their paths (SPEC §15), so its PR
view says "skipped: no matching paths": the HUD in this process directly, ours over
HTTP at `CRCR_HUD_URL`'s `/path-skips` sibling.

Best effort, never in the way of the fan-out: the webhook's answer already lists the
skipped backends, and a HUD that knows no such route (PyTorch's) answers 404, which is
logged and dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import httpx

from crcr.hud.write.path_skips import PathSkips
from crcr.relay.results.forwarder import HUD_TOKEN_HEADER

log = logging.getLogger(__name__)

SkipNotice = Callable[[PathSkips], Awaitable[None]]


def path_skips_url(results_url: str) -> str:
    """`…/api/crcr/results` → `…/api/crcr/path-skips` (any other URL: beside it)."""
    base = results_url.rstrip("/")
    if base.endswith("/results"):
        base = base.removesuffix("/results")
    return f"{base}/path-skips"


def in_process_notice(record: Callable[[PathSkips], Awaitable[int]]) -> SkipNotice:
    """The notice for the HUD running in this process."""

    async def notice(skips: PathSkips) -> None:
        try:
            await record(skips)
        except Exception as exc:  # the fan-out goes on whatever the HUD does
            log.warning("path skips not recorded on the HUD: %s", type(exc).__name__)

    return notice


def http_notice(
    client: httpx.AsyncClient, results_url: str, token: str | None, timeout: float
) -> SkipNotice:
    """The notice for a HUD reached over HTTP."""
    url = path_skips_url(results_url)
    headers = {HUD_TOKEN_HEADER: token} if token else {}

    async def notice(skips: PathSkips) -> None:
        try:
            response = await client.post(
                url, json=skips.as_json(), headers=headers, timeout=timeout
            )
        except httpx.HTTPError as exc:
            log.warning("path skips not sent to the HUD: %s", type(exc).__name__)
            return
        if response.status_code >= 400:
            log.info("the HUD did not take path skips: HTTP %s", response.status_code)

    return notice
