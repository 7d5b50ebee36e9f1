"""The pull-heads role (SPEC §15, supersession): each PR's live head per backend, swapped
atomically so that of two instances only one learns which head a new one replaced, and
so that a racing older head never displaces a newer one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

RECOVERY_PREFIX = "supersede:"
"""The deadline-list key prefix of a pull request's pending supersessions (SPEC §15)."""


def pull_key(upstream_repo: str, number: int) -> str:
    """The key a pull request's heads are kept under (what supersession and the oncall
    comment both read)."""
    return f"{upstream_repo.lower()}#{number}"


def recovery_key(pull: str) -> str:
    """The deadline-list key under which `pull`'s pending supersessions come due."""
    return f"{RECOVERY_PREFIX}{pull}"


@dataclass(frozen=True)
class NewHead:
    """A head about to become its backends' live one, with what orders it among the PR's.

    `before` is a `synchronize` payload's `before` (the head the branch moved from), and
    `updated_at` the payload's `pull_request.updated_at` (ISO-8601); either may be empty.
    """

    delivery_id: str
    head_sha: str
    before: str = ""
    updated_at: str = ""

    def order(self) -> dict[str, str]:
        """What orders it, as a capped backend's waiting line keeps it (`budget_pool`)."""
        return {"head_sha": self.head_sha, "before": self.before, "updated_at": self.updated_at}

    def stored(self) -> dict[str, str]:
        """The live head as kept per backend (`before` only orders the step itself)."""
        head = {"delivery_id": self.delivery_id, "head_sha": self.head_sha}
        if self.updated_at:
            head["updated_at"] = self.updated_at
        return head


@dataclass(frozen=True)
class SupersededHead:
    """A backend's head found older than another by a pull-heads step: its dispatch is to
    be closed for `superseded_by` (the newer head's SHA)."""

    repo: str
    delivery_id: str
    head_sha: str
    superseded_by: str

    def to_store(self) -> dict[str, str]:
        """The JSON-able mapping kept among a pull's pending supersessions."""
        return {
            "repo": self.repo,
            "delivery_id": self.delivery_id,
            "head_sha": self.head_sha,
            "superseded_by": self.superseded_by,
        }

    @classmethod
    def from_store(cls, raw: Mapping[str, Any]) -> SupersededHead:
        """Read back `to_store`'s mapping."""
        return cls(
            str(raw["repo"]),
            str(raw["delivery_id"]),
            str(raw["head_sha"]),
            str(raw["superseded_by"]),
        )


@dataclass(frozen=True)
class PullHeadsView:
    """What the store knows of one pull request's heads."""

    live: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """By backend, its live head (`{"delivery_id", "head_sha"[, "updated_at"]}`)."""
    superseded: frozenset[str] = frozenset()
    """The PR's head SHAs known to be older than another (the latest ones)."""
    pending: Sequence[SupersededHead] = ()
    """Supersessions decided by a step whose follow-up is not yet confirmed done."""


class PullHeads(Protocol):
    """Per pull request and backend, the head whose jobs are live."""

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
        """Make `head` the live head of `pull` for each of `repos` unless it is the older,
        in one atomic step; return the heads this step found superseded.

        Only with `supersede` (a synchronize) are heads ordered and superseded: the live
        head is replaced when the new one is newer (`pull_head_order.is_newer`), else the
        new head is itself returned, superseded by the live one, which stays. Without it,
        the new head becomes live and supersedes nothing. The same delivery again (a
        redelivery) or the same commit (a reopen) supersedes nothing either.

        What is returned is also kept as pending, and `recovery_key(pull)` is put on the
        deadline list at `recover_at`, in the same step: a relay that dies before its
        follow-up is done leaves it for the sweeper. Whoever's step returns a head owns it.
        """

    async def pull_heads(self, pull: str) -> PullHeadsView:
        """Read what is known of `pull`'s heads."""

    async def settle_pull_heads(self, pull: str, done: Sequence[SupersededHead]) -> None:
        """Forget `done` among `pull`'s pending supersessions; with none left, take
        `recovery_key(pull)` off the deadline list."""
