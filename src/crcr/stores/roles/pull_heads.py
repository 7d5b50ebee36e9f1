"""The pull-heads role (SPEC §15, supersession): each PR's live head per backend, swapped
atomically so that of two instances only one learns which head a new one replaced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class PullHeads(Protocol):
    """Per pull request and backend, the head whose jobs are live."""

    async def move_pull_heads(
        self,
        pull: str,
        head: Mapping[str, str],
        repos: Sequence[str],
        *,
        supersede: bool,
        ttl: int,
    ) -> dict[str, dict[str, str]]:
        """Make `head` (`{"delivery_id", "head_sha"}`) the live head of `pull` for each of
        `repos`, in one atomic step; return, by repo, the head it replaced.

        A replaced head is returned only when `supersede` is set and it is another
        commit from another delivery: the same delivery again (a redelivery) or the same
        commit (a reopen) replaces nothing. Whoever's step returns a head owns it.
        """
