"""The governance-record role's contract, on Redis and on SQLite (SPEC §10.2)."""

from __future__ import annotations

from crcr.stores.roles import GovernanceRecords


async def test_records_are_kept_by_kind_and_key_replaced_and_removed(
    store: GovernanceRecords,
) -> None:
    decline = {"by": "maintainer", "at": "2026-11-27T10:00:00+00:00", "until": "2026-12-04"}
    await store.put_governance("decline", "org/a", decline)
    await store.put_governance("override", "org/a", {"level": "L2"})
    assert await store.governance("decline") == {"org/a": decline}
    assert await store.governance("override") == {"org/a": {"level": "L2"}}
    assert await store.governance("episode") == {}

    await store.put_governance("override", "org/a", {"level": "L3"})
    assert await store.governance("override") == {"org/a": {"level": "L3"}}

    assert await store.remove_governance("decline", "org/a") is True
    assert await store.remove_governance("decline", "org/a") is False
    assert await store.governance("decline") == {}
    assert await store.governance("override") == {"org/a": {"level": "L3"}}
