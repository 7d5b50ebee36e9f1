"""The per-callback checks `bench.callback_cpu --alternate CHECK` can leave out of a block.

Each check added to the callback's path has a cost that separate runs cannot resolve
(they spread by ±15 %); blocks with and without it in one process can. A check is left
out by swapping the function the path calls for one that does nothing, for the block's
length only: the bench's callbacks all pass every check, so the answers stay the same
(`200 accepted`) and only the CPU differs. Benchmark-only: nothing here is reachable from
`crcr serve`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from crcr.relay.callback import accept, endpoint, schema
from crcr.runtime import Runtime

Leave = Callable[[Runtime], AbstractContextManager[None]]
"""Leaves one check out of the app built by `runtime` while the context lasts."""


@contextmanager
def _swapped(owner: object, name: str, stand_in: object) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, stand_in)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _no_audit(runtime: Runtime) -> AbstractContextManager[None]:
    return _swapped(runtime.callback, "audit", None)


@contextmanager
def _no_token_binding(runtime: Runtime) -> Iterator[None]:
    """The token's run id and repository id against the body and the allowlist."""

    async def no_entry_check(*args: Any) -> None:
        return None

    with (
        _swapped(endpoint, "check_run_matches_token", lambda identity, parsed: None),
        _swapped(endpoint, "check_entry_constraints", no_entry_check),
    ):
        yield


def _no_url_pinning(runtime: Runtime) -> AbstractContextManager[None]:
    return _swapped(endpoint, "with_pinned_run_url", lambda identity, parsed, web: parsed)


def _no_job_count(runtime: Runtime) -> AbstractContextManager[None]:
    return _swapped(accept, "job_count", lambda deps, delivery_id, repo: None)


@contextmanager
def _job_count_on_its_own_trip(runtime: Runtime) -> Iterator[None]:
    """Not a check left out: the per-dispatch job count as it was before issue 34, a
    rate-limit hit of its own (one more store round trip) before the transition, in
    place of riding the transition's script. The A/B difference is the ride's saving."""
    original = accept.process_job_callback

    async def counted_first(deps: Any, **job: Any) -> Any:
        body = job["callback"].body
        if body.workflow.status == "in_progress":
            count = original_count(deps, body.delivery_id, job["verified_repo"])
            decision = await deps.store.hit_rate_limit(count.key, count.limit, count.window_seconds)
            if not decision.allowed:
                raise accept.too_many_jobs(deps)
        return await original(deps, **job)

    original_count = accept.job_count
    with (
        _swapped(endpoint, "process_job_callback", counted_first),
        _swapped(accept, "job_count", lambda deps, delivery_id, repo: None),
    ):
        yield


def _no_sanitising(runtime: Runtime) -> AbstractContextManager[None]:
    return _swapped(schema, "sanitise_failure_detail", lambda workflow: (dict(workflow), []))


def _no_confirm(runtime: Runtime) -> AbstractContextManager[None]:
    confirmer = runtime.confirmer
    hooks = [
        hook
        for hook in runtime.callback.on_accepted
        if confirmer is None or getattr(hook, "__self__", None) is not confirmer
    ]
    return _swapped(runtime.callback, "on_accepted", hooks)


CHECKS: dict[str, Leave] = {
    "audit": _no_audit,
    "token-binding": _no_token_binding,
    "url-pinning": _no_url_pinning,
    "job-count": _no_job_count,
    "job-count-trip": _job_count_on_its_own_trip,
    "sanitising": _no_sanitising,
    "confirm": _no_confirm,
}
"""Each check by the name `--alternate` takes."""
