"""The Redis store's pull heads: one hash per pull request, ordered and swapped by one Lua
script that also puts the pull's recovery key on the deadline list (same Cluster slot)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from crcr.stores.keys import ttl_milliseconds
from crcr.stores.pull_head_order import KEEP_SUPERSEDED, PENDING_FIELD, SUPERSEDED_FIELD, view_of
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.encoding import QUEUE_TTL_MS
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.pull_heads import (
    NewHead,
    PullHeads,
    PullHeadsView,
    SupersededHead,
    recovery_key,
)

# `stores.pull_head_order.move_heads` in Lua: keep the two in step.
# KEYS[1] the pull's hash, KEYS[2] the deadlines set its recovery key is tracked in.
# ARGV: [1] the head as stored (JSON), [2] delivery id, [3] head SHA, [4] before,
# [5] updated_at, [6] supersede '1'/'0', [7] ttl_ms, [8] recover_at, [9] recovery key,
# [10] how many superseded SHAs to keep, [11] the deadlines set's ttl_ms, repos from 12.
# Returns the JSON list of superseded heads (an empty one encodes as "{}").
MOVE_HEADS = """
local stored, delivery, sha, before, updated = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local supersede = ARGV[6] == '1'
local raw_known = redis.call('HGET', KEYS[1], '#superseded')
local known = raw_known and cjson.decode(raw_known) or {}
local is_known = {}
for _, s in ipairs(known) do is_known[s] = true end
local function newer(live)
  if before ~= '' and before == live.head_sha then return true end
  if is_known[sha] then return false end
  local live_updated = live.updated_at or ''
  if updated ~= '' and live_updated ~= '' and updated ~= live_updated then
    return updated > live_updated
  end
  return true
end
local superseded, went_live = {}, false
for i = 12, #ARGV do
  local repo = ARGV[i]
  local raw = redis.call('HGET', KEYS[1], repo)
  local live = raw and cjson.decode(raw)
  if not (supersede and live and live.delivery_id ~= delivery and live.head_sha ~= sha) then
    redis.call('HSET', KEYS[1], repo, stored)
    went_live = true
  elseif newer(live) then
    superseded[#superseded + 1] = {repo = repo, delivery_id = live.delivery_id,
                                   head_sha = live.head_sha, superseded_by = sha}
    redis.call('HSET', KEYS[1], repo, stored)
    went_live = true
  else
    superseded[#superseded + 1] = {repo = repo, delivery_id = delivery, head_sha = sha,
                                   superseded_by = live.head_sha}
  end
end
if supersede then
  local older, in_older = {}, {}
  if before ~= '' then older[1] = before end
  for _, head in ipairs(superseded) do older[#older + 1] = head.head_sha end
  for _, s in ipairs(older) do in_older[s] = true end
  local forget = went_live and sha or ''
  local kept, seen = {}, {}
  for _, s in ipairs(known) do
    if s ~= forget and not in_older[s] then kept[#kept + 1] = s end
  end
  for _, s in ipairs(older) do
    if s ~= forget and not seen[s] then
      seen[s] = true
      kept[#kept + 1] = s
    end
  end
  local latest = {}
  for i = math.max(1, #kept - tonumber(ARGV[10]) + 1), #kept do latest[#latest + 1] = kept[i] end
  if #latest > 0 then
    redis.call('HSET', KEYS[1], '#superseded', cjson.encode(latest))
  else
    redis.call('HDEL', KEYS[1], '#superseded')
  end
end
if #superseded > 0 then
  local raw_pending = redis.call('HGET', KEYS[1], '#pending')
  local pending = raw_pending and cjson.decode(raw_pending) or {}
  for _, head in ipairs(superseded) do pending[#pending + 1] = head end
  redis.call('HSET', KEYS[1], '#pending', cjson.encode(pending))
  redis.call('ZADD', KEYS[2], ARGV[8], ARGV[9])
  redis.call('PEXPIRE', KEYS[2], ARGV[11])
end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return cjson.encode(superseded)
"""

# KEYS[1] the pull's hash, KEYS[2] its recovery key's deadlines set. ARGV: [1] recovery
# key, then (repo, delivery id) pairs settled. `stores.pull_head_order.settle` in Lua.
SETTLE_HEADS = """
local raw = redis.call('HGET', KEYS[1], '#pending')
local left = {}
if raw then
  local done = {}
  for i = 2, #ARGV, 2 do done[ARGV[i] .. '\\n' .. ARGV[i + 1]] = true end
  for _, head in ipairs(cjson.decode(raw)) do
    if not done[head.repo .. '\\n' .. head.delivery_id] then left[#left + 1] = head end
  end
end
if #left > 0 then
  redis.call('HSET', KEYS[1], '#pending', cjson.encode(left))
  return #left
end
redis.call('HDEL', KEYS[1], '#pending')
redis.call('ZREM', KEYS[2], ARGV[1])
return 0
"""


class RedisPullHeads(RedisStoreBase, PullHeads):
    """One script run per event, whatever the number of backends."""

    def _pull_keys(self, pull: str) -> tuple[str, list[str]]:
        recovery = recovery_key(pull)
        heads = self._keys.beside_deadline("pull-heads", recovery)
        return recovery, [heads, self._keys.deadlines_of(recovery)]

    async def move_pull_heads(
        self,
        pull: str,
        head: NewHead,
        repos: Sequence[str],
        *,
        supersede: bool,
        ttl: int,
        recover_at: float,
    ) -> list[SupersededHead]:
        if not repos:
            return []
        recovery, keys = self._pull_keys(pull)
        argv: list[str | int] = [
            json.dumps(head.stored()),
            head.delivery_id,
            head.head_sha,
            head.before,
            head.updated_at,
            "1" if supersede else "0",
            ttl_milliseconds(ttl),
            repr(float(recover_at)),
            recovery,
            KEEP_SUPERSEDED,
            QUEUE_TTL_MS,
            *repos,
        ]
        answer = json.loads(await self._run(MOVE_HEADS, keys, argv))
        if not isinstance(answer, list):
            return []  # Lua's cjson encodes an empty table as an object
        return [SupersededHead.from_store(raw) for raw in answer]

    async def pull_heads(self, pull: str) -> PullHeadsView:
        _, keys = self._pull_keys(pull)
        with unavailable_on_error():
            fields: dict[str, str] = await self._client.hgetall(keys[0])  # type: ignore[assignment]
        state: dict[str, Any] = {}
        for name, raw in fields.items():
            value = json.loads(raw)
            if name in (SUPERSEDED_FIELD, PENDING_FIELD) and not isinstance(value, list):
                value = []  # an empty Lua table came back as an object
            state[name] = value
        return view_of(state)

    async def settle_pull_heads(self, pull: str, done: Sequence[SupersededHead]) -> None:
        recovery, keys = self._pull_keys(pull)
        pairs = [part for head in done for part in (head.repo, head.delivery_id)]
        await self._run(SETTLE_HEADS, keys, [recovery, *pairs])
