"""The HUD composed and run alone: start-up migrates, routes answer, the CLI migrates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import typer
from pydantic import SecretStr
from sqlalchemy import inspect
from tests.hud.hud_bodies import completed, our_body
from typer.testing import CliRunner

from crcr.cli import hud as cli
from crcr.config.settings import Settings
from crcr.hud.component import create_hud_app, open_hud
from crcr.hud.db import create_results_engine
from crcr.hud.write.ingest import HudIngestor


async def test_the_hud_alone_migrates_ingests_and_answers(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", hud_token=SecretStr("t"))
    app = create_hud_app(settings)
    transport = httpx.ASGITransport(app=app)

    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://hud") as http,
    ):
        created = await http.post(
            "/api/crcr/results",
            json=completed(our_body(), "success"),
            headers={"x-hud-internal-bot": "t"},
        )
        summary = (await http.get("/api/crcr/summary?days=1")).json()

    assert created.status_code == 200
    assert summary["stats"]["runs"] == 1
    assert (tmp_path / "data" / "hud.db").exists()


async def test_retention_purges_days_past_the_limit(tmp_path: Path) -> None:
    hud = await open_hud(Settings(data_dir=tmp_path, hud_retention_days=7), retention=False)
    try:
        old = datetime.now(UTC) - timedelta(days=8)
        await HudIngestor(hud.engine, clock=lambda: old).ingest(our_body(delivery_id="old"))
        await hud.ingestor.ingest(our_body(delivery_id="new"))

        deleted = await hud.purge_expired()

        summary = await hud.queries.summary(30)
        assert deleted == 1
        assert summary.backends[0].in_progress == 1
    finally:
        await hud.close()


def test_crcr_hud_migrate_creates_the_schema(tmp_path: Path) -> None:
    app = typer.Typer()
    cli.register(app)

    result = CliRunner().invoke(app, ["hud", "migrate"], env={"CRCR_DATA_DIR": str(tmp_path)})

    assert result.exit_code == 0, result.output
    engine = create_results_engine(f"sqlite:///{tmp_path / 'hud.db'}")
    try:
        assert "hud_jobs" in inspect(engine).get_table_names()
    finally:
        engine.dispose()


async def test_the_relay_asks_the_in_process_hud_for_a_pr_heads_baseline_verdicts(
    tmp_path: Path,
) -> None:
    hud = await open_hud(Settings(data_dir=tmp_path), retention=False)
    try:
        on_main = our_body(event_type="push", pr_number=0, head_sha="m" * 40, job="X")
        await hud.ingestor.ingest(completed(on_main, "failure"))
        for job in ("X", "Y"):
            failed = our_body(pr_number=9, head_sha="b" * 40, delivery_id="d9", job=job)
            await hud.ingestor.ingest(completed(failed, "failure"))

        verdicts = await hud.baseline_verdicts(9, "b" * 40)

        assert verdicts == {
            ("acme/xpu-backend", "CI", "X"): "already_failing",
            ("acme/xpu-backend", "CI", "Y"): "unknown",
        }
        assert await hud.baseline_verdicts(9, "c" * 40) == {}
    finally:
        await hud.close()
