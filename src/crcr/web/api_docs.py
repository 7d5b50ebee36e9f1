"""`/docs`: Swagger UI served from crcr's own files, so it works on an air-gapped host.

FastAPI's default page loads Swagger UI from a CDN and its favicon from fastapi's site:
blank behind a firewall, and a request to a third party from every operator's browser.
The two assets are vendored in `swagger_ui/` at the version in `swagger_ui/VERSION`
(npm's `swagger-ui-dist`, Apache-2.0, licence and notice beside them), refreshed by
`.ci/refresh-swagger-ui.sh`. ReDoc, CDN-only as well, is not offered.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

ASSETS = Path(__file__).parent / "swagger_ui"
ASSET_TYPES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
}
DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/static"


def mount_api_docs(app: FastAPI) -> None:
    """Serve `/docs` and its assets from this package (the app serves `/openapi.json`)."""

    @app.get(DOCS_PATH, include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} API",
            swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url="data:,",  # no icon rather than one fetched from elsewhere
        )

    @app.get(ASSETS_PATH + "/{name}", include_in_schema=False)
    async def asset(name: str) -> FileResponse:
        media_type = ASSET_TYPES.get(name)
        if media_type is None:
            raise HTTPException(404, f"no such asset: {name}")
        return FileResponse(ASSETS / name, media_type=media_type)
