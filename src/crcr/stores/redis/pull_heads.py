"""The Redis store's pull heads: one hash per pull request, swapped by one Lua script."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from crcr.stores.keys import compose, encode, ttl_milliseconds
from crcr.stores.redis.base import RedisStoreBase
from crcr.stores.roles.pull_heads import PullHeads

# KEYS[1] the pull's hash. ARGV: new head (JSON), supersede ('1'/'0'), ttl_ms, repos...
# Returns the JSON text {repo: replaced head} (an empty object encodes as "{}" or "[]").
MOVE_HEADS = """
local new = cjson.decode(ARGV[1])
local replaced = {}
for i = 4, #ARGV do
  local repo = ARGV[i]
  local raw = redis.call('HGET', KEYS[1], repo)
  if raw then
    local old = cjson.decode(raw)
    if ARGV[2] == '1' and old.delivery_id ~= new.delivery_id
        and old.head_sha ~= new.head_sha then
      replaced[repo] = old
    end
  end
  redis.call('HSET', KEYS[1], repo, ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return cjson.encode(replaced)
"""


class RedisPullHeads(RedisStoreBase, PullHeads):
    """One script run per event, whatever the number of backends."""

    async def move_pull_heads(
        self,
        pull: str,
        head: Mapping[str, str],
        repos: Sequence[str],
        *,
        supersede: bool,
        ttl: int,
    ) -> dict[str, dict[str, str]]:
        if not repos:
            return {}
        key = f"{self._keys.prefix}{{{compose('pull-heads', pull)}}}"
        argv: list[str | int] = [
            encode(dict(head)),
            "1" if supersede else "0",
            ttl_milliseconds(ttl),
            *repos,
        ]
        answer = json.loads(await self._run(MOVE_HEADS, [key], argv))
        if not isinstance(answer, dict):
            return {}  # Lua's cjson encodes an empty table as an array
        return {str(repo): {k: str(v) for k, v in old.items()} for repo, old in answer.items()}
