"""The job-state role (SPEC §5 step 7): compare-and-set on each job's lifecycle record."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from crcr.stores.values import ClaimRef, JobCount, JobRecord, Transition


class JobStates(Protocol):
    """Each job's state and facts, moved atomically; the legal moves live in the relay."""

    async def transition_job(
        self,
        job_key: str,
        *,
        allowed_from: Collection[str | None],
        new: JobRecord,
        ttl: int,
    ) -> Transition:
        """Atomically set the job to `new` if its current state is in `allowed_from`.

        `None` in `allowed_from` means "no record yet". `new.data` is merged over the
        existing data. Whether it applied or not, the previous record is returned so
        the caller can tell an exact repeat from a conflict.
        """

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
        """`transition_job`, then, if it applied, track `deadline` (None: untrack).

        A job tracked already keeps the earlier of its two deadlines. One step (one
        round trip on Redis, one transaction on SQLite): a transition that does not
        apply changes no deadline.

        `count`, if given, is checked and hit first, in the same step: refused, nothing
        is written and the result says `counted=False` (the per-dispatch job bound of
        an `in_progress` callback rides here rather than costing a round trip of its own).

        `listed_under`, if given, adds the job key to that list (kept `ttl`), in the same
        round trip, whether the transition applies or not (one `count` refused may be
        listed too): `listed_jobs` reads it back (every job of one dispatch, for
        supersession, SPEC §15), and its reader checks each job's record.

        `read_claim`, if given, is read in the same round trip, whatever the outcome, as
        `leased_value` would read it (`Transition.claim_value`): a read the caller makes
        after most transitions rides here rather than costing a round trip of its own.
        """

    async def restore_job(
        self,
        job_key: str,
        *,
        expected_state: str,
        previous: JobRecord | None,
        ttl: int,
        deadline: float | None,
    ) -> bool:
        """Undo a transition whose effects were refused downstream of it.

        Atomically: if the job's current state is `expected_state`, put `previous` back
        whole (its data replaces the current data entirely, no merge; `None` removes the
        job record) and set the job's deadline to exactly `deadline` (`None`: untrack it),
        and return True. Otherwise change nothing and return False (the job moved on).
        """

    async def get_job(self, job_key: str) -> JobRecord | None:
        """Return the job's current record, or None."""

    async def listed_jobs(self, name: str) -> list[str]:
        """The job keys listed under `name` by `transition_job_and_deadline`, any order."""
