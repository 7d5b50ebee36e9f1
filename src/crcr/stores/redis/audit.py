"""The Redis store's allowlist stamp and audit trail (SPEC §12).

Each bucket's audit entries are one sorted set scored by time, trimmed by age and count
in the same round trip that adds to it; an index (bucket → newest time) lets a reader
list every bucket. Every command touches one key, so nothing here spans Cluster slots.
"""

from __future__ import annotations

import heapq
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from crcr.stores.keys import decode_mapping, encode, ttl_milliseconds
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.errors import raise_failed, unavailable_on_error

ALLOWLIST_STAMP = "allowlist"


class RedisAudit(RedisStoreBase):
    """The stamp is a counter; the trail is a sorted set per bucket plus an index."""

    async def allowlist_stamp(self) -> int:
        with unavailable_on_error():
            replies = await self._batcher.execute([("GET", self._keys.stamp(ALLOWLIST_STAMP))])
        raise_failed(replies)
        return int(replies[0] or 0)

    async def move_allowlist_stamp(self) -> int:
        with unavailable_on_error():
            return int(await self._client.incr(self._keys.stamp(ALLOWLIST_STAMP)))

    async def append_audit(
        self, entries: Sequence[Mapping[str, Any]], *, keep_seconds: float, keep_per_repo: int
    ) -> None:
        if not entries:
            return
        keep_ms = ttl_milliseconds(keep_seconds, name="keep_seconds")
        by_bucket: dict[str, list[Any]] = defaultdict(list)
        newest: dict[str, float] = {}
        for entry in entries:
            bucket, at = str(entry["bucket"]).lower(), float(entry["at"])
            # A member must be unique even for two identical decisions in one instant.
            member = encode({**entry, "bucket": bucket, "~": uuid.uuid4().hex[:12]})
            by_bucket[bucket] += [at, member]
            newest[bucket] = max(at, newest.get(bucket, at))
        cutoff = max(newest.values()) - keep_seconds
        commands: list[Sequence[Any]] = []
        for bucket, pairs in by_bucket.items():
            key = self._keys.audit(bucket)
            commands += [
                ("ZADD", key, *pairs),
                ("ZREMRANGEBYSCORE", key, "-inf", f"({cutoff}"),
                ("ZREMRANGEBYRANK", key, 0, -(keep_per_repo + 1)),
                ("PEXPIRE", key, keep_ms),
            ]
        index = self._keys.audit_index()
        commands += [
            ("ZADD", index, "GT", *(x for b, at in newest.items() for x in (at, b))),
            ("ZREMRANGEBYSCORE", index, "-inf", f"({cutoff}"),
            ("PEXPIRE", index, keep_ms),
        ]
        with unavailable_on_error():
            replies = await self._batcher.execute(commands)
        raise_failed(replies)

    async def audit_entries(
        self, bucket: str | None = None, *, since: float = 0.0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        with unavailable_on_error():
            if bucket is None:
                buckets: list[str] = await self._client.zrange(  # type: ignore[assignment]
                    self._keys.audit_index(), 0, -1
                )
            else:
                buckets = [bucket.lower()]
            async with self._client.pipeline(transaction=False) as pipe:
                for name in buckets:
                    pipe.zrevrangebyscore(
                        self._keys.audit(name), "+inf", since, start=0, num=limit, withscores=True
                    )
                replies: list[list[tuple[str, float]]] = await pipe.execute()
        newest_first = heapq.merge(*replies, key=lambda pair: -pair[1])
        found = []
        for member, _ in newest_first:
            entry = decode_mapping(member)
            entry.pop("~", None)
            found.append(entry)
            if len(found) >= limit:
                break
        return found
