"""`/metrics` for one process or, under `crcr serve --workers N`, for all of its workers.

uvicorn's workers are separate processes, each with its own registry, and a scrape
reaches whichever worker accepts its connection: counters jumped between the workers'
values (which `rate()` reads as resets) and a gauge showed one worker's view. With
`PROMETHEUS_MULTIPROC_DIR` set, prometheus_client keeps every process's values in files
in that directory and a scrape adds them up (gauges as each declares:
`multiprocess_mode`). `crcr serve` sets it for more than one worker.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, generate_latest, multiprocess

MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def exposition() -> bytes:
    """The Prometheus text of this process, or of every process sharing the directory."""
    if not os.environ.get(MULTIPROCESS_DIR_ENV):
        return generate_latest()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


@contextmanager
def metrics_shared_by_workers(workers: int) -> Iterator[str | None]:
    """For more than one worker, a new directory for their metric files while serving.

    Set before the workers start, so each imports prometheus_client with it. A directory
    the operator set is used as it is (and is theirs to empty between runs: files left
    from an earlier run would still be counted). Yields the directory in use, if any.
    """
    configured = os.environ.get(MULTIPROCESS_DIR_ENV)
    if workers == 1 or configured:
        yield configured or None
        return
    directory = tempfile.mkdtemp(prefix="crcr-metrics-")
    os.environ[MULTIPROCESS_DIR_ENV] = directory
    try:
        yield directory
    finally:
        del os.environ[MULTIPROCESS_DIR_ENV]
        shutil.rmtree(directory, ignore_errors=True)
