"""The HUD's HTTP API: results ingestion (SPEC §6) and the JSON behind every page.

The read endpoints answer with the frozen dataclasses of `crcr.hud.reads`; FastAPI
validates them through pydantic, so they appear in the OpenAPI document as schemas.
"""

# No `from __future__ import annotations`: FastAPI must see the dependency aliases built
# inside `hud_api_router` as objects, not as names it would look up in module globals.
import hmac
import logging
from collections.abc import Callable
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from pydantic import BaseModel, SecretStr

from crcr.hud.queries import MAX_WINDOW_DAYS, HudQueries
from crcr.hud.reads.backend import MAX_PAGE, BackendPage
from crcr.hud.reads.find import MAX_QUERY, FindResult
from crcr.hud.reads.freshness import Freshness
from crcr.hud.reads.latency import LatencyPoint
from crcr.hud.reads.periodic import PeriodicRow
from crcr.hud.reads.pr import MAX_PR_NUMBER, PrView
from crcr.hud.reads.summary import Summary
from crcr.hud.write.ingest import HudIngestor
from crcr.hud.write.path_skips import PathSkips, parse_path_skips
from crcr.web.error_bodies import ErrorBody
from crcr.web.http_body import BodyCut, BodyTooLarge, read_capped_body
from crcr.web.json_body import InvalidJson, load_json
from crcr.web.refusal import Refused

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 2 * 1024 * 1024
BOT_HEADER = "x-hud-internal-bot"

Days = Annotated[
    int,
    Query(ge=1, le=MAX_WINDOW_DAYS, description="Window in whole UTC days (1, 7, 14, 30 … 90)."),
]
EventType = Annotated[
    str | None, Query(max_length=40, description="Only this event type (e.g. pull_request).")
]


class HudServices(Protocol):
    """What the routes need from the composed HUD (`crcr.hud.component.Hud`)."""

    @property
    def token(self) -> SecretStr | None: ...
    @property
    def ingestor(self) -> HudIngestor: ...
    @property
    def queries(self) -> HudQueries: ...
    async def level_status(self) -> dict[str, Any]: ...


class IngestResponse(BaseModel):
    """What `POST /api/crcr/results` did with the body."""

    ok: bool
    outcome: str
    job_key: str


def _authorise(hud: HudServices, presented: str | None) -> None:
    if hud.token is None or not hud.token.get_secret_value().strip():
        # An empty token is no token: an empty header must not match it.
        raise HTTPException(401, "HUD ingestion is not configured (CRCR_HUD_TOKEN is unset)")
    expected = hud.token.get_secret_value().encode()
    if presented is None or not hmac.compare_digest(presented.encode(), expected):
        raise HTTPException(401, f"missing or wrong {BOT_HEADER} header")


async def _read_capped(request: Request) -> bytes:
    try:
        return await read_capped_body(request, MAX_BODY_BYTES)
    except BodyTooLarge as exc:
        raise HTTPException(413, str(exc)) from None
    except BodyCut as cut:
        # A relay that gave up waiting keeps the body queued and sends it again.
        delivery_id = cut.delivery_id() or "unknown"
        logger.info("HUD client went away mid-body (delivery %s); nothing written", delivery_id)
        raise HTTPException(400, "client disconnected") from None


def _path_skips_of(raw: bytes) -> PathSkips:
    """A path-skips notice, or the 400 naming what is wrong with it."""
    try:
        return parse_path_skips(load_json(raw))
    except InvalidJson as exc:
        raise HTTPException(400, f"body: {exc}") from None
    except Refused as exc:
        raise HTTPException(exc.status_code, exc.detail) from None


def hud_api_router(get_hud: Callable[[Request], HudServices]) -> APIRouter:
    """The `/api/crcr/*` routes, reading the composed HUD through `get_hud`."""
    router = APIRouter(prefix="/api/crcr", tags=["hud"])
    HudDep = Annotated[HudServices, Depends(get_hud)]

    @router.post("/results", response_model=IngestResponse)
    async def ingest_results(request: Request, hud: HudDep) -> IngestResponse:
        """Record a job result forwarded by a relay (ours or PyTorch's)."""
        _authorise(hud, request.headers.get(BOT_HEADER))
        raw = await _read_capped(request)
        try:
            body = load_json(raw)
        except InvalidJson as exc:
            raise HTTPException(400, f"body: {exc}") from None
        try:
            result = await hud.ingestor.ingest(body)
        except Refused as exc:
            raise HTTPException(exc.status_code, exc.detail) from None
        return IngestResponse(ok=True, outcome=result.outcome, job_key=result.job_key)

    @router.post("/path-skips")
    async def path_skips(request: Request, hud: HudDep) -> dict[str, Any]:
        """Record the backends a PR head skipped by their paths (SPEC §15; our relay's)."""
        _authorise(hud, request.headers.get(BOT_HEADER))
        skips = _path_skips_of(await _read_capped(request))
        return {"ok": True, "recorded": await hud.ingestor.record_path_skips(skips)}

    @router.get("/summary", response_model=Summary)
    async def summary(hud: HudDep, days: Days = 7, event_type: EventType = None) -> Summary:
        """Every backend's health over the window (stat cards, table, trends)."""
        return await hud.queries.summary(days, event_type)

    @router.get(
        "/backends/{org}/{repo}",
        response_model=BackendPage,
        responses={404: {"model": ErrorBody, "description": "No results from this backend."}},
    )
    async def backend(
        hud: HudDep,
        org: Annotated[str, Path(max_length=100)],
        repo: Annotated[str, Path(max_length=100)],
        days: Days = 7,
        page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
        per_page: Annotated[int, Query(ge=1, le=100)] = 25,
        event_type: EventType = None,
    ) -> BackendPage:
        """A backend's figures and its recent commits' job matrix."""
        found = await hud.queries.backend(
            f"{org}/{repo}", days, page, per_page, event_type=event_type
        )
        if found is None:
            raise HTTPException(404, f"no results from {org}/{repo}")
        return found

    @router.get("/pr/{number}", response_model=PrView)
    async def pr(hud: HudDep, number: Annotated[int, Path(ge=1, le=MAX_PR_NUMBER)]) -> PrView:
        """Every backend's jobs for an upstream PR."""
        return await hud.queries.pr(number)

    @router.get("/metrics", response_model=list[LatencyPoint])
    async def metrics(hud: HudDep, days: Days = 7) -> list[LatencyPoint]:
        """Queue and execution time percentiles per backend per day."""
        return list(await hud.queries.latency_percentiles(days))

    @router.get("/periodic", response_model=list[PeriodicRow])
    async def periodic(hud: HudDep, days: Days = 7) -> list[PeriodicRow]:
        """Nightly/periodic results: latest tested upstream SHA per backend."""
        return list(await hud.queries.periodic(days))

    @router.get("/find", response_model=FindResult)
    async def find(
        hud: HudDep,
        q: Annotated[
            str,
            Query(
                min_length=1,
                max_length=MAX_QUERY,
                description="A PR number (`123`, `#123`), a commit SHA or prefix (4+ hex "
                "digits), a GitHub pull/commit URL, or part of a backend's name.",
            ),
        ],
    ) -> FindResult:
        """What the find box's query names: PRs, commits and backends (none: empty list)."""
        return await hud.queries.find(q)

    @router.get("/freshness", response_model=Freshness)
    async def freshness(hud: HudDep) -> Freshness:
        """A marker that changes whenever a result is written; the live pages poll it."""
        return await hud.queries.freshness()

    @router.get("/level-status")
    async def level_status(hud: HudDep) -> dict[str, Any]:
        """Every backend's level, verdict and criteria (SPEC §10.1); public like the pages."""
        return await hud.level_status()

    return router
