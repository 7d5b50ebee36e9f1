"""The dashboard's static files and favicon."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from crcr.hud.web.pages.site import Site
from crcr.hud.web.render import ASSET_TYPES, ASSETS, asset

IMMUTABLE = "public, max-age=31536000, immutable"


def add_assets(router: APIRouter, site: Site) -> None:
    """Serve `<prefix>/static/<name>` and `/favicon.ico`."""

    @router.get(site.prefix + "/static/{name}", include_in_schema=False)
    async def static(name: str, request: Request) -> Response:
        if name not in ASSETS:
            return JSONResponse({"detail": f"no static file named {name!r}"}, 404)
        body, version = asset(name)
        # Pages link assets by content hash (`?v=`): that URL's bytes never change.
        current = request.query_params.get("v") == version
        headers = {"Cache-Control": IMMUTABLE if current else "no-cache"}
        media_type = ASSET_TYPES[name[name.rindex(".") :]]
        return Response(body, media_type=media_type, headers=headers)

    @router.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        body, _ = asset("favicon.ico")
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(body, media_type="image/x-icon", headers=headers)
