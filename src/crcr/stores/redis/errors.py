"""Which Redis failures mean "unavailable for now" (the caller answers 503) and which are bugs.

Failovers, restarts and a full memory do not always drop the connection: Redis answers
with an error reply instead (READONLY, LOADING, OOM, MASTERDOWN, ...). Those pass for
unavailability as a refused connection does, so callers fail closed and retry later.
Every other error reply (a script bug, a key of the wrong type, a missing permission)
stays a loud error: retrying would not fix it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from redis.exceptions import (
    BusyLoadingError,
    ClusterDownError,
    OutOfMemoryError,
    ReadOnlyError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from crcr.stores.values import StateStoreUnavailable

# redis-py's reply parser turns each of these error codes into its own exception class.
_UNAVAILABLE: tuple[type[Exception], ...] = (
    # Unreachable or too slow (asyncio's TimeoutError, the batcher's, is an OSError).
    RedisConnectionError,
    RedisTimeoutError,
    OSError,
    # Reachable, but refusing until a failover, a restart or the operator is done.
    ReadOnlyError,  # READONLY: a failover demoted the server we write to into a replica
    BusyLoadingError,  # LOADING: a restarted server still reading its dataset
    OutOfMemoryError,  # OOM: maxmemory reached, and nothing may be evicted
    ClusterDownError,  # CLUSTERDOWN, and MASTERDOWN: a replica that lost its primary
    TryAgainError,  # TRYAGAIN: a resharding in progress splits one command's keys
)


def is_unavailable(error: BaseException) -> bool:
    """Whether `error` means Redis cannot serve us right now, rather than a bug."""
    return isinstance(error, _UNAVAILABLE)


def unavailable(error: BaseException) -> StateStoreUnavailable:
    """The `StateStoreUnavailable` to raise from `error`, naming what Redis said."""
    return StateStoreUnavailable(f"Redis is unavailable: {type(error).__name__}: {error}")


@contextmanager
def unavailable_on_error() -> Iterator[None]:
    """Raise the unavailabilities of the block as `StateStoreUnavailable`, the rest as is."""
    try:
        yield
    except Exception as exc:
        if is_unavailable(exc):
            raise unavailable(exc) from exc
        raise


def raise_failed(replies: Sequence[Any]) -> None:
    """Raise the first failed reply of a pipeline read with `raise_on_error=False`.

    Those replies are exceptions returned, not raised, so no `unavailable_on_error`
    around the pipeline sees them.
    """
    for reply in replies:
        if isinstance(reply, Exception):
            if is_unavailable(reply):
                raise unavailable(reply) from reply
            raise reply
