"""Lua scripts that make the Redis state store's compound operations atomic.

Times come from the server's `TIME` (microseconds), never from the client, so that
instances with skewed clocks agree on windows, leases and expiries. Every script
touches only keys that share one hash tag, so it runs unchanged on Redis Cluster
(tests/stores/redis/test_slots.py checks each). Lua numbers are doubles: epoch
microseconds (~1.7e15) are exact below 2**53.
"""

from __future__ import annotations

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
"""

# KEYS[1] job hash. ARGV: ttl_ms, allow_missing ('1'/'0'), n, n allowed states,
# new state, then field/value pairs of data. Returns {applied, previous HGETALL}.
TRANSITION_JOB = """
local current = redis.call('HGETALL', KEYS[1])
local state = nil
for i = 1, #current, 2 do
  if current[i] == 'state' then state = current[i + 1] end
end
local n = tonumber(ARGV[3])
local ok = false
if state == nil then
  ok = ARGV[2] == '1'
else
  for i = 4, 3 + n do
    if ARGV[i] == state then ok = true break end
  end
end
if ok then
  redis.call('HSET', KEYS[1], 'state', ARGV[4 + n], unpack(ARGV, 5 + n))
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return {ok and 1 or 0, current}
"""


def _transition(offset: int) -> str:
    """TRANSITION_JOB's compare-and-set on KEYS[1], its ARGV starting after `offset`
    others; leaves `ok` (applied) and `current` (the previous HGETALL) set."""
    return f"""
local o = {offset}
local current = redis.call('HGETALL', KEYS[1])
local state = nil
for i = 1, #current, 2 do
  if current[i] == 'state' then state = current[i + 1] end
end
local n = tonumber(ARGV[o + 3])
local ok = false
if state == nil then
  ok = ARGV[o + 2] == '1'
else
  for i = o + 4, o + 3 + n do
    if ARGV[i] == state then ok = true break end
  end
end
if ok then
  redis.call('HSET', KEYS[1], 'state', ARGV[o + 4 + n], unpack(ARGV, o + 5 + n))
  redis.call('PEXPIRE', KEYS[1], ARGV[o + 1])
end
"""


def _track(key: int, offset: int) -> str:
    """An applied transition's deadline change on KEYS[key], the job's bucket's deadlines
    zset (its slot): ARGV[offset + 1] the deadline ('' to untrack), then the member (the
    job key) and the zset's ttl_ms. A tracked deadline only moves earlier (LT), as the
    SQLite store's MIN: a repeat of the transition keeps the first deadline."""
    return f"""
if ok then
  local d = {offset}
  if ARGV[d + 1] == '' then
    redis.call('ZREM', KEYS[{key}], ARGV[d + 2])
  else
    redis.call('ZADD', KEYS[{key}], 'LT', ARGV[d + 1], ARGV[d + 2])
    redis.call('PEXPIRE', KEYS[{key}], ARGV[d + 3])
  end
end
"""


# KEYS[1] job hash, KEYS[2] the deadlines zset of its bucket (same slot). ARGV: deadline
# ('' to untrack), job key, deadlines ttl_ms, then TRANSITION_JOB's ARGV. The deadline
# changes only if the transition applies, in the same step. Returns {applied, previous}.
TRANSITION_TRACKED_JOB = _transition(3) + _track(2, 0) + "return {ok and 1 or 0, current}"

# KEYS[1] job hash, KEYS[2] a count's sorted set of hit times, KEYS[3] the job's deadlines
# zset. ARGV: limit, window_us, unique member, then TRANSITION_TRACKED_JOB's ARGV. The
# count is checked and hit first; refused, nothing is written and {0, {}, 0} comes back,
# else {applied, previous HGETALL, 1}.
# The count's key lies in another Cluster slot than the job's (a dispatch's count, a
# job's bucket): a single server only. On a Cluster the store hits the count by
# HIT_RATE_LIMIT first, a round trip of its own (tests/stores/redis/test_slots.py names
# this exception), then runs TRANSITION_TRACKED_JOB.
TRANSITION_COUNTED_JOB = (
    _NOW
    + """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
if redis.call('ZCARD', KEYS[2]) >= limit then return {0, {}, 0} end
redis.call('ZADD', KEYS[2], now, ARGV[3])
redis.call('PEXPIRE', KEYS[2], math.ceil(window / 1000))
"""
    + _transition(6)
    + _track(3, 3)
    + "return {ok and 1 or 0, current, 1}"
)

# KEYS[1] job hash, KEYS[2] the deadlines zset of its bucket (same slot). ARGV: expected
# state, job key (the zset member), deadline ('' to untrack), deadlines ttl_ms, then
# either nothing (no record) or ttl_ms, state and field/value pairs of data. Returns 1
# if restored, 0 if the job moved on.
# An undo must set the deadline in the same step, or a transition slipping in between
# could have its deadline overwritten or its job untracked while in progress: hence the
# job's record and its deadline entry share a Cluster slot (keys.JOB_BUCKETS).
RESTORE_JOB = """
if redis.call('HGET', KEYS[1], 'state') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if #ARGV > 4 then
  redis.call('HSET', KEYS[1], 'state', ARGV[6], unpack(ARGV, 7))
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[2], ARGV[2])
else
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return 1
"""

# KEYS[1] deadlines zset. ARGV: deadline, job key, ttl_ms.
TRACK_DEADLINE = """
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS[1] record hash. ARGV: ttl_ms, then field/value pairs (at least one).
CREATE_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

# KEYS[1] record hash. ARGV: ttl_ms, then field/value pairs (possibly none).
UPDATE_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

# KEYS[1] sorted set of hit times. ARGV: limit, window_us, unique member.
# Returns {allowed, remaining, retry_after_seconds}; a refused hit is not recorded.
HIT_RATE_LIMIT = (
    _NOW
    + """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return {1, limit - count - 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(oldest[2]) + window - now
return {0, 0, math.max(1, math.ceil(wait / 1000000))}
"""
)

# Queue keys, in this order for every queue script: 1 items (hash id -> payload JSON),
# 2 attempts (hash id -> count), 3 leases (hash id -> token), 4 ready (zset id -> µs when
# it may next be leased: ready time or lease expiry), 5 enqueued (zset id -> µs enqueued).
_REFRESH_QUEUE = """
for i = 1, 5 do redis.call('PEXPIRE', KEYS[i], queue_ttl) end
"""

# ARGV: item_id, payload, delay_us, queue_ttl_ms.
ENQUEUE = (
    _NOW
    + """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local queue_ttl = ARGV[4]
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], 0)
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[3]), ARGV[1])
redis.call('ZADD', KEYS[5], now, ARGV[1])
"""
    + _REFRESH_QUEUE
    + "return 1"
)

# ARGV: lease_us, queue_ttl_ms, then one fresh token per item that may be handed out.
# Returns a list of {id, payload, attempts, enqueued_us, token}.
LEASE = (
    _NOW
    + """
local queue_ttl = ARGV[2]
local ids = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, #ARGV - 2)
local leased = {}
for i, id in ipairs(ids) do
  local token = ARGV[2 + i]
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[1]), id)
  redis.call('HSET', KEYS[3], id, token)
  leased[i] = {id, redis.call('HGET', KEYS[1], id), redis.call('HGET', KEYS[2], id),
               redis.call('ZSCORE', KEYS[5], id), token}
end
if #ids > 0 then
"""
    + _REFRESH_QUEUE
    + """
end
return leased
"""
)

# ARGV: item_id, lease_token, lease µs. The item must still be leased with that token.
EXTEND_LEASE = (
    """
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
"""
    + _NOW
    + """
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[3]), ARGV[1])
return 1
"""
)

# ARGV: item_id, lease_token.
ACK = """
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
for i = 1, 3 do redis.call('HDEL', KEYS[i], ARGV[1]) end
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
return 1
"""

# ARGV: item_id, lease_token, delay_us, queue_ttl_ms, replace_payload ('1'/'0'), payload.
RELEASE = (
    """
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
local queue_ttl = ARGV[4]
"""
    + _NOW
    + """
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
if ARGV[5] == '1' then redis.call('HSET', KEYS[1], ARGV[1], ARGV[6]) end
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[3]), ARGV[1])
"""
    + _REFRESH_QUEUE
    + "return 1"
)

# No ARGV. Items waiting in `ready` past now, not leased and attempted before, become
# ready now. Returns how many.
WAKE_RETRIES = (
    _NOW
    + """
local woken = 0
local after = '(' .. string.format('%d', now)
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], after, '+inf')) do
  local attempts = tonumber(redis.call('HGET', KEYS[2], id) or 0)
  if attempts > 0 and redis.call('HEXISTS', KEYS[3], id) == 0 then
    redis.call('ZADD', KEYS[4], now, id)
    woken = woken + 1
  end
end
return woken
"""
)

# KEYS: items, enqueued. Returns {depth, oldest enqueued µs or nil, now µs}.
QUEUE_STATS = (
    _NOW
    + """
local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return {redis.call('HLEN', KEYS[1]), oldest[2] or false, string.format('%d', now)}
"""
)

# KEYS[1] hash job_key -> "<expires µs> <summary JSON>". ARGV: job_key, JSON, ttl_us.
# Each entry expires on its own; the hash lives as long as its longest-lived entry.
PUT_SUMMARY = (
    _NOW
    + """
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d', now + ttl) .. ' ' .. ARGV[2])
local want = math.ceil(ttl / 1000)
if redis.call('PTTL', KEYS[1]) < want then redis.call('PEXPIRE', KEYS[1], want) end
return 1
"""
)

# KEYS[1] summaries hash. Returns live field/JSON pairs and drops expired entries.
LIVE_SUMMARIES = (
    _NOW
    + """
local entries = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #entries, 2 do
  local value = entries[i + 1]
  local space = string.find(value, ' ', 1, true)
  if tonumber(string.sub(value, 1, space - 1)) > now then
    live[#live + 1] = entries[i]
    live[#live + 1] = string.sub(value, space + 1)
  else
    redis.call('HDEL', KEYS[1], entries[i])
  end
end
return live
"""
)

# KEYS[1] lock. ARGV: owner, ttl_ms. Take if free (or expired), renew if ours.
ACQUIRE_LOCK = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

# KEYS[1] lock. ARGV: owner.
RELEASE_LOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""

# KEYS[1] demotions hash. ARGV: repo, JSON object of changes. Merges over the record.
# (cjson rounds numbers to 14 digits: a demotion holds only strings and null.)
UPDATE_DEMOTION = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then return 0 end
local record = cjson.decode(current)
for k, v in pairs(cjson.decode(ARGV[2])) do record[k] = v end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(record))
return 1
"""

# KEYS[1] claim hash (owner, until µs, value). ARGV: owner, lease_us, ttl_ms.
# Returns {held, settled value or ''}.
CLAIM_LEASE = (
    """
local value = redis.call('HGET', KEYS[1], 'value')
if value then return {0, value} end
"""
    + _NOW
    + """
local holder = redis.call('HGET', KEYS[1], 'owner')
local held_until = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if holder and holder ~= ARGV[1] and held_until > now then return {0, ''} end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'until', string.format('%d', now + tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, ''}
"""
)

# KEYS[1] claim hash. ARGV: owner, value ('' gives up the hold), ttl_ms.
# Returns the value settled ('' when none).
SETTLE_LEASE = """
local value = redis.call('HGET', KEYS[1], 'value')
if value then return value end
if ARGV[2] == '' then
  if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('DEL', KEYS[1]) end
  return ''
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'value', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return ARGV[2]
"""
