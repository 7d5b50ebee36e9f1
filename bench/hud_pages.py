"""The HUD's pages over the wire: page weight, time to first byte, and the live poll's cost.

Run against an existing results store (e.g. one `bench.hud_store --rows N` loaded):

    python -m bench.hud_pages --db sqlite:////work/bench-hud-2m.db --samples 30

`crcr hud serve` runs in its own process over the store (retention off, so the store is
not changed); this process is the browser, over loopback HTTP:

1. Page weight of the summary (7- and 30-day windows), a backend page and the JSON
   summary: body bytes as sent with `Accept-Encoding: gzip` and without, plus headers.
2. Time to first byte (request sent → status line and headers read) and server CPU of
   each, drawn afresh and served again from the live pages' cache (`PageCache`), and of
   the revalidation a browser does with the ETag it holds (a 304, no body).
3. The live pages' poll, `GET /api/crcr/freshness` with `If-None-Match`: bytes per poll
   on the wire both ways, the server's CPU per poll (from /proc), and what that makes for
   one open page polling every 15 s and for `--pages` of them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.callbacks import cpu_seconds, free_port

POLL_SECONDS = 15


@contextmanager
def hud_server(db: str) -> Iterator[tuple[str, int]]:
    """`crcr hud serve` over `db`; yields its base URL and process id."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRCR_")}
    with tempfile.TemporaryDirectory(prefix="crcr-bench-pages-") as tmp:
        env.update(
            CRCR_DATABASE_URL=db,
            CRCR_HUD_TOKEN="bench-pages",
            CRCR_HUD_RETENTION_DAYS="36500",
            CRCR_DATA_DIR=tmp,
        )
        command = [sys.executable, "-m", "crcr", "hud", "serve", "--port", str(port)]
        log = (Path(tmp) / "hud.log").open("wb")
        process = subprocess.Popen(
            [*command, "--no-access-log"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 300  # start-up applies any pending migration
            while True:
                try:
                    httpx.get(f"{base}/healthz", timeout=1)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError(f"the HUD did not start; see {log.name}") from None
                    time.sleep(0.2)
            yield base, process.pid
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()


def head_bytes(response: httpx.Response) -> int:
    """The status line and headers as sent (HTTP/1.1)."""
    lines = sum(len(k) + len(v) + 4 for k, v in response.headers.raw)
    return len(f"HTTP/1.1 {response.status_code} {response.reason_phrase}\r\n") + lines + 2


def fetch(client: httpx.Client, path: str, headers: dict[str, str]) -> tuple[float, int, int, str]:
    """One GET: (ms to first byte, body bytes as sent, header bytes, etag)."""
    started = time.perf_counter()
    with client.stream("GET", path, headers=headers) as response:
        first_byte = (time.perf_counter() - started) * 1000
        body = sum(len(chunk) for chunk in response.iter_raw())
        if response.status_code != 304:
            response.raise_for_status()
        return first_byte, body, head_bytes(response), response.headers.get("etag", "")


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def measure_page(client: httpx.Client, pid: int, path: str, samples: int, pages: int) -> None:
    """Weight, TTFB and server CPU of a page: drawn afresh (a URL the cache has not seen,
    as for the first viewer after a write) and again (every other viewer)."""
    _, plain, _, _ = fetch(client, path, {"accept-encoding": "identity"})
    gzip = {"accept-encoding": "gzip"}
    sep = "&" if "?" in path else "?"
    ttfb, zipped, head = [], 0, 0
    cpu_before = cpu_seconds([pid])
    for i in range(samples):
        ms, zipped, head, _ = fetch(client, f"{path}{sep}bench={i}", gzip)
        ttfb.append(ms)
    render_ms = (cpu_seconds([pid]) - cpu_before) * 1000 / samples
    _, _, _, etag = fetch(client, path, gzip)
    cpu_before = cpu_seconds([pid])
    cached = [fetch(client, path, gzip)[0] for _ in range(samples)]
    cached_ms = (cpu_seconds([pid]) - cpu_before) * 1000 / samples
    again = [fetch(client, path, {**gzip, "if-none-match": etag}) for _ in range(samples)]
    revalidated = [ms for ms, *_ in again]
    print(
        f"{path}: {plain:,} B plain, {zipped:,} B gzip (+{head} B headers); "
        f"TTFB drawn p50 {pct(ttfb, 50):.1f} ms, p99 {pct(ttfb, 99):.1f} ms, "
        f"server CPU {render_ms:.1f} ms; again (cached) TTFB p50 {pct(cached, 50):.1f} ms, "
        f"CPU {cached_ms:.1f} ms; 304 revalidation {again[-1][2]} B, "
        f"TTFB p50 {pct(revalidated, 50):.1f} ms"
    )
    if path.startswith("/api/"):
        return  # only pages are live (and cached)
    per_second = pages / POLL_SECONDS
    print(
        f"  {pages} open copies redrawing on every {POLL_SECONDS} s poll (a store written to "
        f"constantly): {per_second:.1f} requests/s, one drawn + the rest cached = "
        f"{(render_ms + (per_second * POLL_SECONDS - 1) * cached_ms) / POLL_SECONDS / 10:.1f} "
        f"% of one core (each drawn afresh: {per_second * render_ms / 10:.0f} %)"
    )


def measure_poll(client: httpx.Client, pid: int, polls: int, pages: int) -> None:
    first = client.get("/api/crcr/freshness")
    headers = {"accept-encoding": "gzip", "if-none-match": first.headers["etag"]}
    request_bytes = len("GET /api/crcr/freshness HTTP/1.1\r\n") + sum(
        len(k) + len(v) + 4 for k, v in client.headers.items()
    )
    request_bytes += sum(len(k) + len(v) + 4 for k, v in headers.items()) + 2
    cpu_before, started = cpu_seconds([pid]), time.perf_counter()
    answers = [client.get("/api/crcr/freshness", headers=headers) for _ in range(polls)]
    wall = time.perf_counter() - started
    cpu_ms = (cpu_seconds([pid]) - cpu_before) * 1000 / polls
    assert all(a.status_code == 304 for a in answers), "the store changed during the run"
    per_poll = request_bytes + head_bytes(answers[-1])
    per_minute = per_poll * 60 / POLL_SECONDS
    rate = pages / POLL_SECONDS
    print(
        f"live poll (304): {per_poll} B per poll on the wire ({request_bytes} up, "
        f"{head_bytes(answers[-1])} down), {per_minute / 1024:.1f} KiB/min per open page; "
        f"server CPU {cpu_ms:.2f} ms per poll, {polls / wall:,.0f} polls/s from one client"
    )
    print(
        f"{pages} open pages polling every {POLL_SECONDS} s: {rate:.1f} requests/s, "
        f"{rate * cpu_ms / 10:.2f} % of one core"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="results store URL (already loaded)")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--polls", type=int, default=500)
    parser.add_argument("--pages", type=int, default=200, help="open pages to extrapolate to")
    parser.add_argument("--backend", default="org3/backend")
    args = parser.parse_args()
    with hud_server(args.db) as (base, pid), httpx.Client(base_url=base, timeout=60) as client:
        for path in (
            "/crcr",
            "/crcr?window=30",
            f"/crcr/{args.backend}",
            "/api/crcr/summary?days=30",
        ):
            measure_page(client, pid, path, args.samples, args.pages)
        measure_poll(client, pid, args.polls, args.pages)


if __name__ == "__main__":
    main()
