"""The HUD's HTTP API over a real store: ingestion answers and every page's figures."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import Engine
from tests.hud.hud_bodies import completed, our_body

from crcr.hud.component import Hud, mount_hud
from crcr.hud.queries import HudQueries
from crcr.hud.write.ingest import HudIngestor

TOKEN = "hud-secret"
TODAY = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)


class Clock:
    """The time the ingestor stamps writes with; tests move it."""

    def __init__(self) -> None:
        self.now = TODAY

    def __call__(self) -> datetime:
        return self.now


def make_app(engine: Engine, clock: Clock, token: str | None = TOKEN) -> FastAPI:
    app = FastAPI()
    app.state.hud = Hud(
        engine=engine,
        ingestor=HudIngestor(engine, clock=clock),
        queries=HudQueries(engine),
        token=SecretStr(token) if token else None,
        retention_days=90,
    )
    mount_hud(app)
    return app


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def client(engine: Engine, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=make_app(engine, clock))
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:
        yield http


async def post(client: httpx.AsyncClient, body: Any, token: str | None = TOKEN) -> httpx.Response:
    headers = {"x-hud-internal-bot": token} if token is not None else {}
    return await client.post("/api/crcr/results", json=body, headers=headers)


async def test_a_valid_body_is_created_then_updated(client: httpx.AsyncClient) -> None:
    first = await post(client, our_body())
    second = await post(client, completed(our_body(), "success"))

    assert first.status_code == 200 and first.json()["outcome"] == "created"
    assert second.status_code == 200 and second.json()["outcome"] == "updated"


@pytest.mark.parametrize("token", [None, "wrong", ""])
async def test_a_missing_or_wrong_token_is_401(
    client: httpx.AsyncClient, token: str | None
) -> None:
    response = await post(client, our_body(), token=token)

    assert response.status_code == 401
    assert TOKEN not in response.text


async def test_without_a_configured_token_ingestion_refuses_everything(
    engine: Engine, clock: Clock
) -> None:
    transport = httpx.ASGITransport(app=make_app(engine, clock, token=None))
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as http:
        response = await post(http, our_body(), token="anything")

    assert response.status_code == 401
    assert "not configured" in response.json()["detail"]


async def test_a_body_over_two_mebibytes_is_413(client: httpx.AsyncClient) -> None:
    body = our_body(padding="x" * (2 * 1024 * 1024))

    response = await post(client, body)

    assert response.status_code == 413


async def test_a_bad_body_is_400_naming_the_field(client: httpx.AsyncClient) -> None:
    body = our_body()
    del body["untrusted"]["callback_payload"]["workflow"]["run_id"]

    response = await post(client, body)
    not_json = await client.post(
        "/api/crcr/results", content=b"{", headers={"x-hud-internal-bot": TOKEN}
    )

    assert response.status_code == 400
    assert "untrusted.callback_payload.workflow.run_id" in response.json()["detail"]
    assert not_json.status_code == 400


async def seed(client: httpx.AsyncClient, clock: Clock) -> None:
    """Three backends: two active this week, one only seen ten days ago."""
    a = "acme/alpha"
    runs = [
        (a, "CI", "build", "success", 10.0, 100.0),
        (a, "CI", "test-1", "success", 20.0, 200.0),
        (a, "CI", "test-2", "failure", 30.0, 300.0),
    ]
    clock.now = TODAY
    for repo, workflow, job, conclusion, queue, execution in runs:
        body = our_body(
            repo=repo, level="L3", workflow=workflow, job=job, queue_time=queue, check_run_id=job
        )
        await post(client, body)
        await post(client, completed(body, conclusion, execution_time=execution))
    clock.now = TODAY - timedelta(days=3)
    zombie = our_body(repo="acme/beta", level="L2", pr_number=102, queue_time=5.0)
    await post(client, zombie)
    await post(client, completed(zombie, "timed_out", execution_time=21600.0))
    clock.now = TODAY - timedelta(days=10)
    await post(client, completed(our_body(repo="acme/gamma", level="L2"), "success"))
    clock.now = TODAY


async def test_the_summary_counts_the_window_from_rollups(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    await seed(client, clock)

    summary = (await client.get("/api/crcr/summary", params={"days": 7})).json()

    assert summary["stats"] == {"runs": 4, "failures": 1, "backends": 2, "timed_out": 1}
    rows = {row["repo"]: row for row in summary["backends"]}
    alpha = rows["acme/alpha"]
    assert (alpha["level"], alpha["total"], alpha["successes"], alpha["failures"]) == (
        "L3",
        3,
        2,
        1,
    )
    assert alpha["pass_rate"] == pytest.approx(2 / 3)
    assert alpha["avg_queue_time"] == 20.0 and alpha["avg_execution_time"] == 200.0
    assert [p["completed"] for p in alpha["trend"]] == [0, 0, 0, 0, 0, 0, 3]
    assert rows["acme/beta"]["timed_out"] == 1 and rows["acme/beta"]["trend"][3]["completed"] == 1
    assert rows["acme/gamma"]["active"] is False and rows["acme/gamma"]["total"] == 0


async def test_the_summary_filters_by_event_type(client: httpx.AsyncClient, clock: Clock) -> None:
    await seed(client, clock)

    pushes = (await client.get("/api/crcr/summary?days=7&event_type=push")).json()

    assert pushes["stats"]["runs"] == 0 and pushes["event_type"] == "push"


async def test_the_backend_page_collapses_shards_and_keeps_earlier_attempts(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    await seed(client, clock)
    rerun = our_body(repo="acme/alpha", job="build", run_attempt="2", check_run_id="build-2")
    await post(client, completed(rerun, "success"))
    first_try = our_body(repo="acme/alpha", job="build", check_run_id="build")
    await post(client, completed(first_try, "failure"))

    page = (await client.get("/api/crcr/backends/acme/alpha?days=7")).json()

    assert page["stats"]["pr_count"] == 1 and page["stats"]["total"] == 4
    assert page["columns"] == ["CI / build", "CI / test"]
    [row] = page["rows"]
    assert (row["pr_number"], row["head_sha"]) == (101, "a" * 40)
    test = row["cells"]["CI / test"]
    assert (test["conclusion"], test["shard_count"], test["job_name"]) == ("failure", 2, "test-2")
    build = row["cells"]["CI / build"]
    assert (build["run_attempt"], build["conclusion"]) == (2, "success")
    assert [a["conclusion"] for a in build["earlier_attempts"]] == ["failure"]


async def test_the_backend_page_paginates_commits_newest_first(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    for hours, pr in enumerate((201, 202, 203)):
        clock.now = TODAY + timedelta(minutes=hours)
        await post(client, our_body(pr_number=pr, head_sha=str(pr) * 10, delivery_id=str(pr)))

    first = (await client.get("/api/crcr/backends/acme/xpu-backend?per_page=2")).json()
    second = (await client.get("/api/crcr/backends/acme/xpu-backend?per_page=2&page=2")).json()

    assert [r["pr_number"] for r in first["rows"]] == [203, 202]
    assert [r["pr_number"] for r in second["rows"]] == [201]
    assert first["pagination"] == {"page": 1, "per_page": 2, "total_rows": 3, "pages": 2}


async def test_an_unknown_backend_is_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/crcr/backends/nobody/nothing")

    assert response.status_code == 404


async def test_the_pr_view_lists_every_backend(client: httpx.AsyncClient, clock: Clock) -> None:
    await seed(client, clock)

    view = (await client.get("/api/crcr/pr/101")).json()

    assert [b["repo"] for b in view["backends"]] == ["acme/alpha", "acme/gamma"]
    assert len(view["backends"][0]["jobs"]) == 3 and view["head_shas"] == ["a" * 40]


async def test_metrics_give_percentiles_per_backend_per_day(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    await seed(client, clock)

    points = (await client.get("/api/crcr/metrics?days=7")).json()

    alpha = next(p for p in points if p["repo"] == "acme/alpha")
    assert alpha["queue_samples"] == 3 and alpha["execution_samples"] == 3
    assert alpha["queue_p50"] == pytest.approx(20.0, rel=0.05)
    assert alpha["execution_p99"] == pytest.approx(300.0, rel=0.05)


async def test_periodic_shows_the_latest_tested_sha(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    for hours, (sha, conclusion) in enumerate((("1" * 40, "success"), ("2" * 40, "failure"))):
        clock.now = TODAY + timedelta(minutes=hours)
        body = our_body(event_type="nightly", pr_number=0, head_sha=sha, delivery_id=sha)
        await post(client, completed(body, conclusion))

    [row] = (await client.get("/api/crcr/periodic?days=7")).json()

    assert (row["latest_sha"], row["latest_conclusion"]) == ("2" * 40, "failure")
    assert (row["total"], row["successes"], row["pass_rate"]) == (2, 1, 0.5)


@pytest.mark.parametrize("days", ["0", "91", "week"])
async def test_a_window_outside_one_to_ninety_days_is_refused(
    client: httpx.AsyncClient, days: str
) -> None:
    response = await client.get("/api/crcr/summary", params={"days": days})

    assert response.status_code == 422
    assert "days" in json.dumps(response.json())


async def test_the_openapi_document_describes_the_responses(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]

    assert {"Summary", "BackendPage", "PrView", "LatencyPoint", "PeriodicRow"} <= set(schemas)
    assert "pass_rate" in schemas["BackendSummaryRow"]["properties"]


@pytest.mark.parametrize("depth", [2_000, 100_000])
async def test_a_deeply_nested_body_is_a_bad_request_not_a_crash(
    client: httpx.AsyncClient, depth: int
) -> None:
    raw = b'{"trusted": ' + b"[" * depth + b"]" * depth + b"}"

    response = await client.post(
        "/api/crcr/results", content=raw, headers={"x-hud-internal-bot": TOKEN}
    )

    assert response.status_code == 400
    assert response.json()["detail"] == "body: nested deeper than 1024 levels"


async def test_level_status_is_public_and_has_spec_10_1s_shape(
    client: httpx.AsyncClient,
) -> None:
    for run in range(10):
        body = our_body(
            run_id=str(run),
            check_run_id=str(run),
            status="completed",
            conclusion="failure" if run == 0 else "success",
            execution_time=1800.0,
            completed_at="2026-11-20T10:30:00Z",
        )
        await post(client, body)

    response = await client.get("/api/crcr/level-status")

    assert response.status_code == 200
    status = response.json()
    assert set(status) == {"generated_at", "repos"}
    [repo] = status["repos"]
    assert repo == {
        "repo": "acme/xpu-backend",
        "level": "L3",
        "change": None,
        "noData": False,
        "windowDays": 7,
        "criteria": [
            {"criterion": "job_pass_rate", "measured": 90.0, "target": "≥ 90%", "met": True},
            {"criterion": "timeout_rate", "measured": 0.0, "target": "< 1%", "met": True},
            {"criterion": "e2e_p50_hours", "measured": 0.5, "target": "< 3 h", "met": True},
        ],
        "demoted": None,
        # SPEC §10.2's standing: with no relay beside the HUD, none to tell.
        "effectiveLevel": "L3",
        "declined": None,
        "override": None,
        "episodes": [],
    }


async def test_an_empty_token_configured_in_code_lets_no_empty_header_in(
    engine: Engine, clock: Clock
) -> None:
    app = make_app(engine, clock)
    app.state.hud.token = SecretStr("")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hud") as client:
        response = await post(client, our_body(), token="")

    assert response.status_code == 401


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/crcr/pr/9223372036854775808", {}, "number"),
        ("/api/crcr/pr/99999999999999999999999999", {}, "number"),
        ("/api/crcr/backends/org/repo", {"page": "4611686018427387904"}, "page"),
        ("/api/crcr/backends/org/repo", {"page": "9223372036854775808"}, "page"),
    ],
)
async def test_an_integer_past_64_bits_is_a_422_naming_the_parameter(
    client: httpx.AsyncClient, clock: Clock, path: str, params: dict[str, str], field: str
) -> None:
    # Issue 33 item 16: the database cannot take such a number (or an offset made from
    # it); each was a 500 with two tracebacks.
    assert (await post(client, our_body(repo="org/repo"))).status_code == 200

    response = await client.get(path, params=params)

    assert response.status_code == 422, response.text
    assert field in json.dumps(response.json())


async def test_the_reads_answer_empty_for_numbers_the_database_cannot_hold(
    client: httpx.AsyncClient, engine: Engine
) -> None:
    # The HTML pages call the same reads with numbers they parsed themselves.
    assert (await post(client, our_body(repo="org/repo"))).status_code == 200
    queries = HudQueries(engine)

    view = await queries.pr(2**63)
    page = await queries.backend("org/repo", 7, page=2**62)

    assert view.backends == ()
    assert page is not None and page.rows == () and page.pagination.total_rows == 1


async def test_path_skips_over_http_show_on_the_pr_view_and_need_the_token(
    client: httpx.AsyncClient,
) -> None:
    notice = {
        "upstream_repo": "pytorch/pytorch",
        "pr_number": 101,
        "head_sha": "d0c5" * 10,
        "delivery_id": "d-1",
        "skipped": ["acme/xpu"],
    }
    refused = await client.post("/api/crcr/path-skips", json=notice)
    assert refused.status_code == 401
    bad = await client.post(
        "/api/crcr/path-skips",
        json={**notice, "pr_number": "x"},
        headers={"x-hud-internal-bot": TOKEN},
    )
    assert (bad.status_code, "pr_number" in bad.json()["detail"]) == (400, True)

    sent = await client.post(
        "/api/crcr/path-skips", json=notice, headers={"x-hud-internal-bot": TOKEN}
    )

    assert sent.json() == {"ok": True, "recorded": 1}
    view = (await client.get("/api/crcr/pr/101")).json()
    assert view["skipped"] == [
        {"repo": "acme/xpu", "head_sha": "d0c5" * 10, "reason": "skipped: no matching paths"}
    ]
