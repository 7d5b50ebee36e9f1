"""GitHub repository ids learned on first sight, so a repository name keeps its owner.

A name is not an identity on GitHub: a repository can be renamed, or deleted and its
name taken by someone else, whose tokens then carry the allowlisted name. The numeric
`repository_id` claim cannot be taken over. The first verified token seen for an
allowlisted name fixes its id (an operator may pin it in the allowlist instead).
"""

from __future__ import annotations

from crcr.oidc.claims import VerifiedIdentity
from crcr.relay.allowlist.model import AllowlistEntry
from crcr.relay.callback.token_binding import check_constraints
from crcr.stores.roles import Caches

CACHE_NAMESPACE = "repository-id"
REMEMBERED_FOR = 400 * 24 * 3600
"""Seconds a learned id is kept: well beyond any gap between two runs of a backend."""


class RepositoryIds:
    """The learned ids, kept in the state store and remembered in this process."""

    def __init__(self, store: Caches) -> None:
        self._store = store
        # An id never changes for a name once learned, so a process asks the store once.
        self._known: dict[str, str] = {}

    async def learned(self, repo: str, presented: str | None) -> str | None:
        """The id `repo` was first seen with; the first sight (with `presented`) fixes it."""
        name = repo.lower()
        known = self._known.get(name)
        if known is not None:
            return known
        known = await self._store.cache_get(CACHE_NAMESPACE, name)
        if known is None:
            if not presented:
                return None
            await self._store.cache_set(CACHE_NAMESPACE, name, presented, REMEMBERED_FOR)
            known = presented
        self._known[name] = known
        return known


async def check_entry_constraints(
    ids: RepositoryIds, identity: VerifiedIdentity, entry: AllowlistEntry
) -> None:
    """Raise `NotThisRepository` unless the token is the allowlisted repository's own."""
    learned = None
    if identity.issuer_kind == "github" and entry.constraints.repository_id is None:
        presented = identity.claims.get("repository_id")
        learned = await ids.learned(entry.repo, str(presented) if presented else None)
    check_constraints(identity, entry.constraints, learned)
