"""`crcr levels status`: the verdicts from the results store, as the API's JSON or a table."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.cli.test_cli import crcr
from tests.hud.levels.level_jobs import pr_job, write

from crcr.hud.db import create_results_engine, migrate


def _store_with_a_failing_backend(data_dir: Path) -> None:
    engine = create_results_engine(f"sqlite:///{data_dir / 'hud.db'}")
    try:
        migrate(engine)
        write(engine, [pr_job(run, conclusion="failure") for run in range(3)], datetime.now(UTC))
    finally:
        engine.dispose()


def _levels(*args: str, data_dir: Path, **env: str) -> str:
    """`crcr levels status` on a HUD without an allowlist: the levels last reported."""
    result = crcr("levels", "status", *args, CRCR_DATA_DIR=str(data_dir), **env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_json_prints_the_level_status_apis_body(tmp_path: Path) -> None:
    _store_with_a_failing_backend(tmp_path)

    status = json.loads(_levels("--json", data_dir=tmp_path))

    [repo] = status["repos"]
    assert (repo["repo"], repo["level"], repo["change"]) == ("acme/xpu-backend", "L3", "demote")
    assert repo["criteria"][0] == {
        "criterion": "job_pass_rate",
        "measured": 0.0,
        "target": "≥ 90%",
        "met": False,
    }


def test_the_table_shows_each_criterion_under_its_backends_verdict(tmp_path: Path) -> None:
    _store_with_a_failing_backend(tmp_path)

    table = _levels(data_dir=tmp_path, COLUMNS="160")

    assert "acme/xpu-backend" in table and "demote, 7 d" in table
    assert "job_pass_rate" in table and "≥ 90%" in table and "NO" in table
