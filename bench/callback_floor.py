"""The floor of a callback's CPU on this machine: the work no callback can skip, alone.

Run: `python -m bench.callback_floor [--n 2000] [--redis-url URL]`.

Issue 34 names the floor of a callback as ~300 µs on the machine that set its goal of
450 µs: one RS256 signature check, one parse of the ~26 KB body, one Redis round trip
and one HUD upsert. Machines differ (a pure-Python loop of 10 M additions, printed as
`calibration`, tells them apart), so this measures each piece here, with the same
inputs `bench.callback_cpu` sends: an Actions token from the sandbox issuer, the bench's
`completed` body, a Redis GET on loopback (16 in flight, as callback_cpu's clients) and
the HUD's SQLite write path at batches of 16 (`bench.hud_write`). What `callback_cpu`
measures beyond the sum is the relay's own work on top of the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

import jwt
import redis.asyncio as aioredis

from bench.callback_load import bench_repos, callback_body, job
from bench.hud_write import measure as hud_write_cpu
from crcr.relay.callback.schema import parse_callback
from crcr.sandbox.oidc_issuer import SandboxIssuer

AUDIENCE = "crcr-bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"


def cpu_each(n: int, step: Callable[[], object]) -> float:
    """Process CPU per call of `step`, in µs."""
    started = time.process_time()
    for _ in range(n):
        step()
    return (time.process_time() - started) / n * 1e6


def calibration() -> float:
    """Seconds of CPU for 10 M additions in a Python loop: how fast this machine is."""
    started = time.process_time()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.process_time() - started


def rs256_verify(n: int) -> float:
    """One signature check (and claims decode) of an Actions token."""
    issuer = SandboxIssuer("https://token.actions.example")
    token = issuer.mint_actions_token("bench-org0/backend-0", audience=AUDIENCE)
    public = issuer.signing_key.private_key.public_key()
    return cpu_each(n, lambda: jwt.decode(token, public, algorithms=["RS256"], audience=AUDIENCE))


def parse_body(n: int) -> float:
    """One parse and check of the bench's `completed` body."""
    body = callback_body(job(0, bench_repos(50), 20), "completed")
    return cpu_each(n, lambda: parse_callback(body))


def redis_round_trip(n: int, url: str) -> float:
    """One GET on loopback, 16 in flight (redis-py's CPU: packing, parsing, the pool)."""

    async def run() -> float:
        client = aioredis.Redis.from_url(url)
        await client.set("crcr-floor", b"x" * 200)

        async def worker(count: int) -> None:
            for _ in range(count):
                await client.get("crcr-floor")

        await worker(50)  # the pool's connections opened before the clock starts
        started = time.process_time()
        await asyncio.gather(*(worker(n // 16) for _ in range(16)))
        spent = time.process_time() - started
        await client.delete("crcr-floor")
        await client.aclose()
        return spent / (n // 16 * 16) * 1e6

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    args = parser.parse_args()
    pieces = {
        "RS256 verify": rs256_verify(args.n),
        "parse the body": parse_body(args.n),
        "Redis round trip": redis_round_trip(args.n, args.redis_url),
        "HUD upsert (batch 16)": hud_write_cpu(args.n // 2, 16)[0],
    }
    print(f"calibration: {calibration():.2f} s for 10 M additions in a Python loop")
    print("| piece | CPU µs |\n|---|---|")
    for name, micros in pieces.items():
        print(f"| {name} | {micros:.0f} |")
    print(f"| **floor** | **{sum(pieces.values()):.0f}** |")


if __name__ == "__main__":
    main()
