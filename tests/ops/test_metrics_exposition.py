"""Under `crcr serve --workers N` a scrape shows every worker's metrics, not one worker's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from crcr.ops.metrics_exposition import MULTIPROCESS_DIR_ENV, metrics_shared_by_workers

WORKER = """
import sys
from crcr.relay.callback.metrics import CALLBACKS
from crcr.relay.sweeper.metrics import QUEUE_DEPTH
CALLBACKS.labels(outcome="accepted").inc(int(sys.argv[1]))
QUEUE_DEPTH.labels(queue="hud").set(float(sys.argv[2]))
"""
SCRAPE = """
import sys
from crcr.ops.metrics_exposition import exposition
sys.stdout.write(exposition().decode())
"""


def run_python(code: str, *args: str, directory: Path) -> str:
    env = {**os.environ, MULTIPROCESS_DIR_ENV: str(directory)}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def sample(text: str, name: str, labels: dict[str, str]) -> float:
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    raise AssertionError(f"{name}{labels} not in the scrape")


def test_counters_add_up_and_a_queue_gauge_shows_the_latest_reading(tmp_path: Path) -> None:
    run_python(WORKER, "3", "7", directory=tmp_path)  # one worker
    run_python(WORKER, "4", "2", directory=tmp_path)  # another, reading the queue later

    scrape = run_python(SCRAPE, directory=tmp_path)

    assert sample(scrape, "crcr_callbacks_total", {"outcome": "accepted"}) == 7
    assert sample(scrape, "crcr_queue_depth", {"queue": "hud"}) == 2


def test_serve_gives_several_workers_a_fresh_directory_and_removes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MULTIPROCESS_DIR_ENV, raising=False)
    with metrics_shared_by_workers(2) as directory:
        assert directory is not None and Path(directory).is_dir()
        assert os.environ[MULTIPROCESS_DIR_ENV] == directory
    assert not Path(directory).exists()
    assert MULTIPROCESS_DIR_ENV not in os.environ


def test_one_worker_keeps_its_own_registry_and_an_operators_directory_is_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(MULTIPROCESS_DIR_ENV, raising=False)
    with metrics_shared_by_workers(1) as directory:
        assert directory is None and MULTIPROCESS_DIR_ENV not in os.environ

    monkeypatch.setenv(MULTIPROCESS_DIR_ENV, str(tmp_path))
    with metrics_shared_by_workers(4) as directory:
        assert directory == str(tmp_path)
    assert tmp_path.is_dir() and os.environ[MULTIPROCESS_DIR_ENV] == str(tmp_path)
