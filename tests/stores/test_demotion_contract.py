"""The demotion role's contract, on Redis and on SQLite."""

from __future__ import annotations

from crcr.stores.roles import Demotions

# --- temporary demotions (SPEC §10.1) ---------------------------------------------


async def test_a_demotion_is_created_once_so_its_start_stays_put(store: Demotions) -> None:
    first = {"since": "2026-11-25T10:00:00+00:00", "from_level": "L3", "pr_url": None}
    assert await store.add_demotion("Org/XPU", first) is True
    later = {"since": "2026-11-25T11:00:00+00:00", "from_level": "L3", "pr_url": None}
    assert await store.add_demotion("org/xpu", later) is False
    assert await store.demotions() == {"org/xpu": first}


async def test_a_demotion_takes_its_pull_request_and_ends_when_removed(store: Demotions) -> None:
    record = {"since": "2026-11-25T10:00:00+00:00", "from_level": "L4", "pr_url": None}
    await store.add_demotion("org/a", record)
    await store.add_demotion("org/b", record)
    url = "https://github.com/pytorch/pytorch/pull/12"
    assert await store.update_demotion("org/a", {"pr_url": url}) is True
    assert await store.update_demotion("org/none", {"pr_url": url}) is False
    assert await store.demotions() == {"org/a": {**record, "pr_url": url}, "org/b": record}

    assert await store.remove_demotion("ORG/A") is True
    assert await store.remove_demotion("org/a") is False
    assert await store.demotions() == {"org/b": record}
    assert await store.demotions() == {"org/b": record}
