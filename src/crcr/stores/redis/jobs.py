"""The Redis store's job state machine: compare-and-set transitions by script (SPEC §5)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from crcr.stores.keys import ttl_milliseconds
from crcr.stores.redis import scripts as lua
from crcr.stores.redis.batching import Command
from crcr.stores.redis.deadlines import RedisDeadlines
from crcr.stores.redis.encoding import QUEUE_TTL_MS, as_dict, data_fields, data_of
from crcr.stores.redis.errors import unavailable_on_error
from crcr.stores.redis.rate_limit import rate_args, rate_decision
from crcr.stores.roles.jobs import JobStates
from crcr.stores.values import ClaimRef, JobCount, JobRecord, Transition


def _transition_args(
    allowed_from: Collection[str | None], new: JobRecord, ttl: int
) -> list[str | int]:
    """TRANSITION_JOB's ARGV: ttl, whether "no record" is allowed, the allowed states, the new."""
    states = [state for state in allowed_from if state is not None]
    return [
        ttl_milliseconds(ttl),
        "1" if None in allowed_from else "0",
        len(states),
        *states,
        new.state,
        *data_fields(new.data),
    ]


class RedisJobs(RedisDeadlines, JobStates):
    """Job records as hashes; a transition may move the job's deadline in the same trip."""

    async def transition_job(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
    ) -> Transition:
        args = _transition_args(allowed_from, new, ttl)
        applied, previous = await self._run(lua.TRANSITION_JOB, [self._keys.job(job_key)], args)
        return Transition(applied=bool(applied), previous=_job_record(as_dict(previous)))

    async def transition_job_and_deadline(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
        deadline: float | None,
        count: JobCount | None = None,
        listed_under: str | None = None,
        read_claim: ClaimRef | None = None,
    ) -> Transition:
        """The transition and the deadline change in one script: one round trip, one step.

        The deadline changes only if the transition applies (as on SQLite): a tracked
        job's deadline only moves earlier (`ZADD LT`, so a repeat keeps the first), and
        `deadline=None` untracks the job. The job's record and its deadlines set share a
        Cluster slot, so this holds there too.

        A `count` rides the transition's script on a single server (still one round
        trip); a Cluster keeps its key in another slot, so there it is hit first.
        `read_claim` is one more command of the pipeline (HGET, as `leased_value`); on a
        Cluster the pipeline is split by node, so any slot will do.
        """
        job = self._keys.job(job_key)
        deadlines = self._keys.deadlines_of(job_key)
        tracking: list[str | int] = [
            "" if deadline is None else repr(float(deadline)),
            job_key,
            QUEUE_TTL_MS,
        ]
        args = tracking + _transition_args(allowed_from, new, ttl)
        script, keys = lua.TRANSITION_TRACKED_JOB, [job, deadlines]
        if count is not None and self._on_cluster:
            hit = await self._run(
                lua.HIT_RATE_LIMIT,
                [self._keys.rate(count.key)],
                rate_args(count.limit, count.window_seconds),
            )
            if not rate_decision(hit).allowed:
                return Transition(applied=False, previous=None, counted=False)
        elif count is not None:
            script = lua.TRANSITION_COUNTED_JOB
            keys = [job, self._keys.rate(count.key), deadlines]
            args = rate_args(count.limit, count.window_seconds) + args
        then: list[Command] = []
        if listed_under is not None:  # in another Cluster slot: the pipeline splits there
            listed = self._keys.listed(listed_under)
            then += [("SADD", listed, job_key), ("PEXPIRE", listed, ttl_milliseconds(ttl))]
        if read_claim is not None:
            then.append(("HGET", self._keys.lease_claim(read_claim.name, read_claim.key), "value"))
        reply, *rest = await self._run_with(script, keys, args, then=then)
        applied, previous, *counted = reply
        claim_value = rest[-1] if read_claim is not None else None
        return Transition(
            applied=bool(applied),
            previous=_job_record(as_dict(previous)),
            counted=bool(counted[0]) if counted else True,
            claim_value=None if claim_value is None else str(claim_value),
        )

    async def restore_job(
        self,
        job_key: str,
        *,
        expected_state: str,
        previous: JobRecord | None,
        ttl: int,
        deadline: float | None,
    ) -> bool:
        ttl_ms = ttl_milliseconds(ttl)
        tracked = "" if deadline is None else repr(float(deadline))
        args: list[str | int] = [expected_state, job_key, tracked, QUEUE_TTL_MS]
        if previous is not None:
            args += [ttl_ms, previous.state, *data_fields(previous.data)]
        keys = [self._keys.job(job_key), self._keys.deadlines_of(job_key)]
        return bool(await self._run(lua.RESTORE_JOB, keys, args))

    async def get_job(self, job_key: str) -> JobRecord | None:
        with unavailable_on_error():
            fields: dict[str, str] = await self._client.hgetall(  # type: ignore[assignment]
                self._keys.job(job_key)
            )
        return _job_record(fields)

    async def listed_jobs(self, name: str) -> list[str]:
        with unavailable_on_error():
            members = await self._client.smembers(self._keys.listed(name))
        return [str(member) for member in members]


def _job_record(fields: Mapping[str, str]) -> JobRecord | None:
    state = fields.get("state")
    return None if state is None else JobRecord(state=state, data=data_of(fields))
