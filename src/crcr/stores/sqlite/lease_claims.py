"""The SQLite store's claims with a lease: a JSON row of `records` per claim."""

from __future__ import annotations

import sqlite3

from crcr.stores.keys import compose, decode_mapping, encode
from crcr.stores.roles.lease_claims import LeaseClaims
from crcr.stores.sqlite.base import SqliteStoreBase, live_value, put_value, ttl_seconds
from crcr.stores.values import LeaseClaim

KIND = "lease-claim"


class SqliteLeaseClaims(SqliteStoreBase, LeaseClaims):
    """`{"owner", "until", "value"}` per claim, read and written in one transaction."""

    async def claim_lease(
        self, name: str, key: str, owner: str, *, lease: float, ttl: int
    ) -> LeaseClaim:
        row_key, lease_for, expires_in = compose(name, key), ttl_seconds(lease), ttl_seconds(ttl)

        def claim(conn: sqlite3.Connection, now: float) -> LeaseClaim:
            current = live_value(conn, KIND, row_key, now)
            record = decode_mapping(current) if current is not None else {}
            if record.get("value") is not None:
                return LeaseClaim(held=False, value=str(record["value"]))
            holder, until = record.get("owner"), float(record.get("until") or 0)
            if holder is not None and holder != owner and until > now:
                return LeaseClaim(held=False)
            taken = encode({"owner": owner, "until": now + lease_for, "value": None})
            put_value(conn, KIND, row_key, taken, now + expires_in)
            return LeaseClaim(held=True)

        return await self._db.write(claim)

    async def settle_lease(
        self, name: str, key: str, owner: str, value: str | None, ttl: int
    ) -> str | None:
        if value == "":
            raise ValueError("a settled value must not be empty")
        row_key, expires_in = compose(name, key), ttl_seconds(ttl)

        def settle(conn: sqlite3.Connection, now: float) -> str | None:
            current = live_value(conn, KIND, row_key, now)
            record = decode_mapping(current) if current is not None else {}
            if record.get("value") is not None:
                return str(record["value"])
            if value is None:
                if record.get("owner") == owner:
                    conn.execute("DELETE FROM records WHERE kind = ? AND key = ?", (KIND, row_key))
                return None
            put_value(conn, KIND, row_key, encode({"value": value}), now + expires_in)
            return value

        return await self._db.write(settle)

    async def leased_value(self, name: str, key: str) -> str | None:
        return await self._db.read(lambda conn, now: settled_value(conn, name, key, now))


def settled_value(conn: sqlite3.Connection, name: str, key: str, now: float) -> str | None:
    """The value settled on claim (`name`, `key`), read in the caller's transaction."""
    current = live_value(conn, KIND, compose(name, key), now)
    if current is None:
        return None
    value = decode_mapping(current).get("value")
    return None if value is None else str(value)
