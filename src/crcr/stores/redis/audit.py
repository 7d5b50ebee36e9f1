"""The Redis store's allowlist stamp and audit trail (SPEC §12).

Each bucket's audit entries are one sorted set scored by time, trimmed by age and count
by the script that adds to it; an index (bucket → newest time) lets a reader list every
bucket. Every command and script touches one key, so nothing here spans Cluster slots;
one batch of entries costs one round trip whatever its buckets.
"""

from __future__ import annotations

import heapq
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from redis.exceptions import NoScriptError

from crcr.stores.keys import decode_mapping, encode, ttl_milliseconds
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.errors import raise_failed, unavailable_on_error
from crcr.stores.roles.audit import AllowlistStamp, AuditLog

ALLOWLIST_STAMP = "allowlist"

# KEYS[1] a bucket's sorted set. ARGV: exclusive lower score bound to keep, how many to
# keep, TTL in ms, then score/member pairs to add.
APPEND_AUDIT = """
redis.call('ZADD', KEYS[1], unpack(ARGV, 4))
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[2]) + 1))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""


class RedisAudit(RedisStoreBase, AllowlistStamp, AuditLog):
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
        # A member must be unique even for two identical decisions in one instant: the
        # batch's random name and the entry's place in it (one uuid4 per entry cost more
        # than the rest of its encoding).
        batch = uuid.uuid4().hex[:12]
        for n, entry in enumerate(entries):
            bucket, at = str(entry["bucket"]).lower(), float(entry["at"])
            member = encode({**entry, "bucket": bucket, "~": f"{batch}{n:x}"})
            by_bucket[bucket] += [at, member]
            newest[bucket] = max(at, newest.get(bucket, at))
        cutoff = f"({max(newest.values()) - keep_seconds}"
        index = self._keys.audit_index()
        then: list[Sequence[Any]] = [
            ("ZADD", index, "GT", *(x for b, at in newest.items() for x in (at, b))),
            ("ZREMRANGEBYSCORE", index, "-inf", cutoff),
            ("PEXPIRE", index, keep_ms),
        ]
        script = self._script(APPEND_AUDIT)
        for attempt in range(2):
            # One single-key script per bucket, all in one round trip shared with other
            # callers; a retry after Redis lost the script re-adds the same members.
            commands = [
                ("EVALSHA", script.sha, 1, self._keys.audit(bucket), cutoff, keep_per_repo,
                 keep_ms, *pairs)
                for bucket, pairs in by_bucket.items()
            ]  # fmt: skip
            with unavailable_on_error():
                replies = await self._batcher.execute([*commands, *then])
            if attempt == 0 and any(isinstance(r, NoScriptError) for r in replies):
                await self._reload(script)
                continue
            raise_failed(replies)
            return

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
