"""`GET /badge/<owner>/<repo>.svg` (SPEC §13): a backend's level and state for its README.

Cacheable: a strong ETag (the SVG's own digest) and a short `Cache-Control`, so GitHub's
image proxy and browsers revalidate often and get a bodiless 304 while nothing changed.
A repository the relay has never heard of — not on the allowlist, no results — is a 404
naming it (not a grey badge): a README showing a broken image says "wrong name" sooner
than one that looks fine forever.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Literal, Protocol

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from crcr.hud.badges.svg import badge_of, render
from crcr.hud.health.report import BackendHealth
from crcr.relay.allowlist.model import Allowlist
from crcr.web.error_bodies import error_response

BadgeEvent = Literal["nightly", "push", "pull_request"]
CACHE_CONTROL = "public, max-age=300"
"""Five minutes: a README's badge follows a state change soon, at one request per viewer."""
SVG_TYPE = "image/svg+xml; charset=utf-8"


class BackendSource(Protocol):
    """Where a backend's health comes from (the relay's health assembler)."""

    async def backend(self, repo: str, events: frozenset[str] | None = None) -> BackendHealth:
        """One backend's state as of now, judged on `events` (None: the default ones)."""

    async def known_spelling(self, repo: str) -> str | None:
        """`repo` as its results spell it, or None when it never reported."""


def etag_of(body: bytes) -> str:
    """A strong ETag: the body's digest, quoted."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether `If-None-Match` names `etag` (weak comparison, as RFC 9110 asks for GET)."""
    if not if_none_match:
        return False
    tags = [tag.strip() for tag in if_none_match.split(",")]
    return "*" in tags or etag in (tag.removeprefix("W/") for tag in tags)


def badge_router(
    health: Callable[[], BackendSource | None], allowlist: Callable[[], Awaitable[Allowlist]]
) -> APIRouter:
    """The badge route; `health` and `allowlist` are looked up per request."""
    router = APIRouter(tags=["hud"])

    @router.get(
        "/badge/{owner}/{name}.svg",
        response_class=Response,
        responses={200: {"content": {"image/svg+xml": {}}}, 304: {}, 404: {}},
    )
    async def badge(
        owner: str,
        name: str,
        request: Request,
        event: Annotated[
            BadgeEvent | None, Query(description="Judge only this event's jobs.")
        ] = None,
    ) -> Response:
        """A shields-style SVG: the backend's level and state; nothing external in it."""
        source = health()
        if source is None:
            return error_response(404, "badges need the relay's own HUD")
        repo = f"{owner}/{name}"
        entry = (await allowlist()).entry(repo)
        spelled = entry.repo if entry else await source.known_spelling(repo)
        if spelled is None:
            return error_response(
                404, f"no crcr backend {repo}: it is not on the allowlist and sent no results"
            )
        judged = await source.backend(spelled, None if event is None else frozenset({event}))
        level = entry.level.name if entry else "unlisted"
        body = render(badge_of(level, str(judged.state), event)).encode()
        etag = etag_of(body)
        headers = {"ETag": etag, "Cache-Control": CACHE_CONTROL}
        if matches(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=SVG_TYPE, headers=headers)

    return router
