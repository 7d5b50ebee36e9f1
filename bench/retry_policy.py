"""What one retry decision costs: crcr's `retry_policy` against tenacity and stamina.

Run: `python -m bench.retry_policy [--iterations N] [--only SECTION ...]`. Three hot
paths, each in µs per call (the best of 15 rounds: the machine is shared):

- `drain`: the wait of one queued item the sweeper releases (`attempts` known, no loop);
- `wrapper`: an in-process retry loop around a call that does not fail (the GitHub
  client's request, the HUD forwarder's POST), against the bare `await`;
- `github_request`: `GitHubHttp.request` answered 200 by an in-memory transport — run
  it with `PYTHONPATH=<another checkout>/src` to compare two versions of the client.

tenacity and stamina are measured when installed (neither is a crcr dependency).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

ROUNDS = 15


class Unavailable(Exception):
    """What the measured loops retry (never raised here: nothing fails)."""


def _optional(name: str) -> Any:
    """The module `name`, or None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _best_sync(call: Callable[[], object], iterations: int) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(iterations):
            call()
        best = min(best, time.perf_counter() - started)
    return best / iterations * 1e6


async def _best_async(call: Callable[[], Awaitable[object]], iterations: int) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(iterations):
            await call()
        best = min(best, time.perf_counter() - started)
    return best / iterations * 1e6


@dataclass(frozen=True)
class _DrainBackoffBefore:
    """relay/sweeper/drain.Backoff as it was before the one policy."""

    base: float = 5.0
    cap: float = 60.0
    random: Callable[[], float] = random.random

    def delay(self, attempts: int) -> float:
        ceiling = min(self.cap, self.base * 2.0 ** min(attempts, 30))
        return float(ceiling * (0.5 + self.random() / 2))


def _drain_candidates() -> dict[str, Callable[[], object]]:
    """The sweeper's release wait: 5 s doubling, capped at 60 s, times 0.5-1.0."""
    from crcr.web.retry_policy import Backoff

    attempts = 3
    before = _DrainBackoffBefore()
    policy = Backoff(base=5.0, cap=60.0, jitter=(0.5, 1.0))
    candidates: dict[str, Callable[[], object]] = {
        "drain.Backoff (before)": lambda: before.delay(attempts),
        "crcr Backoff.delay": lambda: policy.delay(attempts),
    }
    tenacity = _optional("tenacity")
    if tenacity is None:
        return candidates
    # tenacity's waits read a RetryCallState: the drain would build one per item.
    controller = tenacity.Retrying()
    wait = tenacity.wait_exponential(multiplier=2.5, max=30) + tenacity.wait_random_exponential(
        multiplier=2.5, max=30
    )

    def with_tenacity() -> object:
        state = tenacity.RetryCallState(controller, None, (), {})
        state.attempt_number = attempts + 1
        return wait(state)

    candidates["tenacity wait (+ RetryCallState)"] = with_tenacity
    return candidates


def _wrapper_candidates() -> dict[str, Callable[[], Awaitable[object]]]:
    """Four tries, full jitter from 0.5 s capped at 8 s: the GitHub client's policy."""
    from crcr.web.retry_policy import Backoff, retrying

    async def call() -> int:
        return 200

    policy = Backoff(base=0.5, cap=8.0, jitter=(0.0, 1.0))

    async def hand_loop() -> int:  # the shape of GitHubHttp.request
        retry = 0
        while True:
            try:
                return await call()
            except Unavailable:
                if retry >= 3:
                    raise
                await asyncio.sleep(policy.delay(retry))
                retry += 1

    async def crcr_retrying() -> int:
        return await retrying(call, backoff=policy, retry_on=Unavailable, tries=4)

    candidates: dict[str, Callable[[], Awaitable[object]]] = {
        "bare await (floor)": call,
        "hand loop + Backoff": hand_loop,
        "crcr retrying()": crcr_retrying,
    }
    tenacity = _optional("tenacity")
    if tenacity is not None:
        decorated = tenacity.retry(
            stop=tenacity.stop_after_attempt(4),
            wait=tenacity.wait_random_exponential(multiplier=0.5, max=8),
            retry=tenacity.retry_if_exception_type(Unavailable),
            reraise=True,
        )(call)

        async def tenacity_loop() -> int:
            async for attempt in tenacity.AsyncRetrying(
                stop=tenacity.stop_after_attempt(4),
                wait=tenacity.wait_random_exponential(multiplier=0.5, max=8),
                retry=tenacity.retry_if_exception_type(Unavailable),
                reraise=True,
            ):
                with attempt:
                    return await call()
            raise AssertionError("unreachable")

        candidates["tenacity @retry"] = decorated
        candidates["tenacity AsyncRetrying loop"] = tenacity_loop
    stamina = _optional("stamina")
    if stamina is None:
        return candidates
    stamina_decorated = stamina.retry(
        on=Unavailable, attempts=4, wait_initial=0.5, wait_max=8.0, wait_jitter=0.5
    )(call)

    async def stamina_loop() -> int:
        async for attempt in stamina.retry_context(
            on=Unavailable, attempts=4, wait_initial=0.5, wait_max=8.0, wait_jitter=0.5
        ):
            with attempt:
                return await call()
        raise AssertionError("unreachable")

    candidates["stamina @retry"] = stamina_decorated
    candidates["stamina retry_context loop"] = stamina_loop
    return candidates


async def _github_request(iterations: int) -> float:
    import httpx

    from crcr.github.http import GitHubHttp

    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={}))
    http = GitHubHttp("https://api.github.test", transport=transport)

    async def token() -> str:
        return "token bench"

    async def one() -> Any:
        return await http.request("GET", "/repos/o/r", auth=token)

    try:
        await _best_async(one, iterations // 10)  # warm the pools
        return await _best_async(one, iterations)
    finally:
        await http.aclose()


def _print(section: str, results: dict[str, float]) -> None:
    print(section)
    for name, micros in results.items():
        print(f"  {name:<36} {micros:8.3f} µs/call")


async def _main(iterations: int, only: set[str]) -> None:
    if "drain" in only:
        drain = _drain_candidates()
        _print("drain (one release wait)", {n: _best_sync(c, iterations) for n, c in drain.items()})
    if "wrapper" in only:
        wrapper = _wrapper_candidates()
        results = {name: await _best_async(call, iterations) for name, call in wrapper.items()}
        _print("wrapper (a call that does not fail)", results)
    if "github_request" in only:
        micros = await _github_request(iterations // 20)
        _print("github_request (GitHubHttp.request, 200 in memory)", {"request": micros})


def main() -> None:
    """Print µs per call for each candidate on each hot path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50_000)
    sections = ["drain", "wrapper", "github_request"]
    parser.add_argument("--only", nargs="+", choices=sections, default=sections)
    args = parser.parse_args()
    stamina = _optional("stamina")
    if stamina is not None:
        stamina.instrumentation.set_on_retry_hooks([])  # no structlog/prometheus hooks
    asyncio.run(_main(args.iterations, set(args.only)))


if __name__ == "__main__":
    main()
