"""`crcr_allowlist_reloads_total{source}` counts allowlists put in force, by where from."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from crcr.relay.allowlist.location import FileLocation, parse_location
from crcr.relay.allowlist.source import RELOAD_SOURCES, AllowlistSource
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

ALLOWLIST = "L2:\n  - org/backend\n"


def reloads(source: str) -> float:
    return REGISTRY.get_sample_value("crcr_allowlist_reloads_total", {"source": source}) or 0.0


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StateStore]:
    sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
    yield sqlite_store
    await sqlite_store.close()


async def test_a_fetch_counts_as_its_kind_and_a_shared_copy_as_shared(
    tmp_path: Path, store: StateStore
) -> None:
    path = tmp_path / "allowlist.yaml"
    path.write_text(ALLOWLIST)
    before = {source: reloads(source) for source in RELOAD_SOURCES}

    await AllowlistSource(FileLocation(path), store=store, ttl=60).get()
    await AllowlistSource(FileLocation(path), store=store, ttl=60).get()  # a second instance

    after = {source: reloads(source) - before[source] for source in RELOAD_SOURCES}
    assert after == {"file": 1, "url": 0, "github": 0, "shared": 1}


async def test_a_github_blob_counts_as_github(store: StateStore) -> None:
    async def contents(repo: str, path: str, ref: str) -> bytes:
        return ALLOWLIST.encode()

    location = parse_location("https://github.com/pytorch/pytorch/blob/main/.github/a.yml")
    before = reloads("github")

    await AllowlistSource(location, store=store, ttl=900, fetch_contents=contents).refresh()

    assert reloads("github") - before == 1


def test_the_label_set_is_closed() -> None:
    exposed = {
        sample.labels["source"]
        for metric in REGISTRY.collect()
        if metric.name == "crcr_allowlist_reloads"
        for sample in metric.samples
        if sample.name.endswith("_total")
    }
    assert exposed <= set(RELOAD_SOURCES)
