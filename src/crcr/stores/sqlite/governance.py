"""The SQLite store's governance records (SPEC §10.2): rows of `records` that never expire."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.stores.keys import decode_mapping, encode
from crcr.stores.roles.governance import GovernanceRecords
from crcr.stores.sqlite.base import SqliteStoreBase, put_value

NEVER = 1e300
"""A governance record ends when the relay ends it, not after a TTL."""


def _kind(kind: str) -> str:
    return f"governance:{kind}"


class SqliteGovernance(SqliteStoreBase, GovernanceRecords):
    """Governance records keyed by (`governance:<kind>`, key), each a JSON record."""

    async def put_governance(self, kind: str, key: str, record: Mapping[str, Any]) -> None:
        value = encode(dict(record))
        await self._db.write(lambda conn, now: put_value(conn, _kind(kind), key, value, NEVER))

    async def remove_governance(self, kind: str, key: str) -> bool:
        return await self._db.write(
            lambda conn, now: (
                conn.execute(
                    "DELETE FROM records WHERE kind = ? AND key = ?", (_kind(kind), key)
                ).rowcount
                > 0
            )
        )

    async def governance(self, kind: str) -> dict[str, dict[str, Any]]:
        rows = await self._db.read(
            lambda conn, now: conn.execute(
                "SELECT key, value FROM records WHERE kind = ?", (_kind(kind),)
            ).fetchall()
        )
        return {str(key): decode_mapping(value) for key, value in rows}
