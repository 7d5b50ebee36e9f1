"""The Redis store's budget slots: one JSON value per pool, changed by one Lua script.

The script is `stores.budget_pool`'s rules in Lua, so that the count and the line change
in one step on the server, whatever instance asks; times come from the server's `TIME`.
One key per pool: one Cluster slot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from crcr.stores.budget_pool import Pool
from crcr.stores.keys import compose, encode, ttl_milliseconds
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.roles.budget_slots import BudgetSlots, PoolView, SlotChange, SlotTerms

# KEYS[1] the pool. ARGV: op (join|note|leave|refill), limit, hold_ms, ttl_ms, then
# join: place, holder, payload, order (JSON or ''); note: holder, job, finished ('1'/'0');
# leave: holder. A line item is {place, holder, payload[, order]}; `newer` is
# `pull_head_order.is_newer_than_waiting`.
# Returns the JSON text {"admitted": [payload text...], "replaced": [payload text...]}.
CHANGE_POOL = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local raw = redis.call('GET', KEYS[1])
local pool = {held = {}, jobs = {}, line = {}}
if raw then pool = cjson.decode(raw) end
local held, jobs = pool.held or {}, pool.jobs or {}
local line = {}
for _, item in ipairs(pool.line or {}) do line[#line + 1] = item end
local op, limit, hold = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local replaced = {}
local function newer(new, old)
  if new.before ~= '' and new.before == old.head_sha then return true end
  if old.before ~= '' and old.before == new.head_sha then return false end
  if new.updated_at ~= '' and old.updated_at ~= '' and new.updated_at ~= old.updated_at then
    return new.updated_at > old.updated_at
  end
  return true
end
local function free(holder)
  held[holder] = nil
  jobs[holder] = nil
  local kept = {}
  for _, item in ipairs(line) do
    if item[2] == holder then replaced[#replaced + 1] = item[3] else kept[#kept + 1] = item end
  end
  line = kept
end
if op == 'join' then
  local place, holder, payload = ARGV[5], ARGV[6], ARGV[7]
  local order = nil
  if ARGV[8] ~= '' then order = cjson.decode(ARGV[8]) end
  if held[holder] == nil then
    local found = false
    for index, item in ipairs(line) do
      if item[1] == place then
        found = true
        if order and item[4] and not newer(order, item[4]) then
          if item[2] ~= holder then replaced[#replaced + 1] = payload end
        else
          if item[2] ~= holder then replaced[#replaced + 1] = item[3] end
          line[index] = {place, holder, payload, order}
        end
        break
      end
    end
    if not found then line[#line + 1] = {place, holder, payload, order} end
  end
elseif op == 'note' then
  local holder, job = ARGV[5], ARGV[6]
  if held[holder] ~= nil then
    local open = {}
    for _, j in ipairs(jobs[holder] or {}) do if j ~= job then open[#open + 1] = j end end
    if ARGV[7] == '1' then
      if #open == 0 then free(holder) else jobs[holder] = open end
    else
      open[#open + 1] = job
      jobs[holder] = open
      held[holder] = now + hold
    end
  end
elseif op == 'leave' then
  free(ARGV[5])
end
for holder, untill in pairs(held) do
  if untill <= now then
    held[holder] = nil
    jobs[holder] = nil
  end
end
local admitted = {}
local count = 0
for _ in pairs(held) do count = count + 1 end
while #line > 0 and count < limit do
  local item = table.remove(line, 1)
  held[item[2]] = now + hold
  count = count + 1
  admitted[#admitted + 1] = item[3]
end
redis.call('SET', KEYS[1], cjson.encode({held = held, jobs = jobs, line = line}), 'PX', ARGV[4])
return cjson.encode({admitted = admitted, replaced = replaced})
"""


class RedisBudgetSlots(RedisStoreBase, BudgetSlots):
    """Every change is one script run on the pool's key."""

    def _pool_key(self, pool: str) -> str:
        return f"{self._keys.prefix}{{{compose('budget-pool', pool)}}}"

    async def _change(self, op: str, pool: str, terms: SlotTerms, *args: str) -> SlotChange:
        hold_ms = ttl_milliseconds(terms.hold_for, name="hold_for")
        argv: list[str | int] = [op, terms.limit, hold_ms, ttl_milliseconds(terms.ttl), *args]
        answer = json.loads(await self._run(CHANGE_POOL, [self._pool_key(pool)], argv))
        return SlotChange(_payloads(answer.get("admitted")), _payloads(answer.get("replaced")))

    async def join_pool(
        self,
        pool: str,
        place: str,
        holder: str,
        payload: Mapping[str, Any],
        terms: SlotTerms,
        order: Mapping[str, str] | None = None,
    ) -> SlotChange:
        ordered = encode(dict(order)) if order else ""
        return await self._change(
            "join", pool, terms, place, holder, encode(dict(payload)), ordered
        )

    async def note_job(
        self, pool: str, holder: str, job: str, *, finished: bool, terms: SlotTerms
    ) -> SlotChange:
        return await self._change("note", pool, terms, holder, job, "1" if finished else "0")

    async def leave_pool(self, pool: str, holder: str, terms: SlotTerms) -> SlotChange:
        return await self._change("leave", pool, terms, holder)

    async def refill_pool(self, pool: str, terms: SlotTerms) -> SlotChange:
        return await self._change("refill", pool, terms)

    async def pool_view(self, pool: str) -> PoolView:
        with unavailable_on_error():
            text: str | None = await self._client.get(self._pool_key(pool))  # type: ignore[assignment]
        return Pool.load(text).view()


def _payloads(texts: Any) -> tuple[Mapping[str, Any], ...]:
    # cjson writes an empty array as `{}`.
    return tuple(json.loads(text) for text in (texts or [])) if isinstance(texts, list) else ()
