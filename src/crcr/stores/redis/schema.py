"""The Redis store's schema version, and the upgrade of older data in place.

The version lives in `<prefix>{schema}`. Data without it is either nothing (a new
deployment: stamped with this version) or data of version 1, written before versions
existed (upgraded). Version 1 kept every job record under a tag of its own and every
deadline in one set; version 2 spreads both over `keys.JOB_BUCKETS` tags so that a job
and its deadline share a Redis Cluster slot.

An upgrade copies before it deletes and skips what is there already, so one that is
interrupted, or run by two instances starting together, is simply run again; the stamp
is written last. Instances of the older crcr must be stopped first: they would go on
writing the old layout.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from crcr.stores.keys import unescape_part
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import QUEUE_TTL_MS, scored
from crcr.stores.redis.errors import raise_failed, unavailable_on_error
from crcr.stores.schema import REDIS_STATE_SCHEMA, SchemaTooNew

log = logging.getLogger(__name__)

_CHUNK = 500
"""Keys moved per round trip."""


def _glob_escaped(text: str) -> str:
    """`text` as a literal in a SCAN MATCH pattern."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


class RedisSchema(RedisStoreBase):
    """Reads, checks and upgrades the layout version of the data under this prefix."""

    async def stored_schema_version(self) -> int | None:
        """The version stamped on the data; None when unstamped (new, or version 1)."""
        with unavailable_on_error():
            found = await self._client.get(self._keys.schema())
        return None if found is None else int(found)

    async def data_schema_version(self) -> int | None:
        """The version of the data under this prefix: stamped, or 1; None when there is none."""
        found = await self.stored_schema_version()
        if found is None and await self._any_key():
            return 1
        return found

    async def upgrade_schema(self) -> int:
        """Bring the data to `REDIS_STATE_SCHEMA`; return the version it was found in.

        Raises `SchemaTooNew` for data of a newer crcr, leaving it untouched.
        """
        found = await self.data_schema_version() or REDIS_STATE_SCHEMA
        if found > REDIS_STATE_SCHEMA:
            store = f"Redis state store (prefix {self._keys.prefix!r})"
            raise SchemaTooNew(store, found, REDIS_STATE_SCHEMA)
        if found < 2:
            log.info(
                "upgrading the Redis state store from schema 1 to 2",
                extra={"prefix": self._keys.prefix},
            )
            await self._move_legacy_jobs()
            await self._move_legacy_deadlines()
        if found < REDIS_STATE_SCHEMA or await self.stored_schema_version() is None:
            with unavailable_on_error():
                await self._client.set(self._keys.schema(), REDIS_STATE_SCHEMA)
        return found

    async def _scan(self, pattern: str) -> AsyncIterator[str]:
        """Every key matching `pattern`, on every primary of a Cluster."""
        with unavailable_on_error():
            async for key in self._client.scan_iter(match=pattern, count=1000):
                yield key

    async def _any_key(self) -> bool:
        async for _ in self._scan(f"{_glob_escaped(self._keys.prefix)}*"):
            return True
        return False

    async def _batch(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        with unavailable_on_error():
            replies = await self._batcher.execute(commands)
        raise_failed(replies)
        return replies

    async def _move_legacy_jobs(self) -> None:
        """Version 1 job hashes `<prefix>{job:<key>}` to `keys.job(<key>)`."""
        head = f"{self._keys.prefix}{{job:"
        old_keys = [key async for key in self._scan(f"{_glob_escaped(head)}*}}")]
        for start in range(0, len(old_keys), _CHUNK):
            chunk = old_keys[start : start + _CHUNK]
            new_keys = [self._keys.job(unescape_part(old[len(head) : -1])) for old in chunk]
            reads: list[Sequence[Any]] = []
            for old, new in zip(chunk, new_keys, strict=True):
                reads += [("HGETALL", old), ("PTTL", old), ("EXISTS", new)]
            replies = await self._batch(reads)
            writes: list[Sequence[Any]] = []
            for i, (old, new) in enumerate(zip(chunk, new_keys, strict=True)):
                fields, ttl_ms, exists = replies[3 * i : 3 * i + 3]
                if fields and not exists:  # a newer write under the new key wins
                    flat = [part for pair in dict(fields).items() for part in pair]
                    writes.append(("HSET", new, *flat))
                    if int(ttl_ms) > 0:
                        writes.append(("PEXPIRE", new, int(ttl_ms)))
                writes.append(("DEL", old))
            await self._batch(writes)

    async def _move_legacy_deadlines(self) -> None:
        """Version 1's one deadlines set `<prefix>{deadlines}` to the buckets' sets."""
        old = f"{self._keys.prefix}{{deadlines}}"
        (entries,) = await self._batch([("ZRANGE", old, 0, -1, "WITHSCORES")])
        pairs = scored(entries)
        for start in range(0, len(pairs), _CHUNK):
            writes: list[Sequence[Any]] = []
            for deadline, job_key in pairs[start : start + _CHUNK]:
                bucket = self._keys.deadlines_of(job_key)
                # NX: a deadline tracked under the new layout is the newer one.
                writes += [("ZADD", bucket, "NX", deadline, job_key)]
                writes += [("PEXPIRE", bucket, QUEUE_TTL_MS)]
            await self._batch(writes)
        await self._batch([("DEL", old)])
