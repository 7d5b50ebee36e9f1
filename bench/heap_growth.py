"""What the Python heap keeps per callback: tracemalloc over phases of callbacks in process.

Run: `python -m bench.heap_growth [--phases 11] [--per-phase 4000] [--base 3]
[--state sqlite] [--relay-env CRCR_DATABASE_URL=postgresql+psycopg://…]`.

The soak's RSS creeps by a few bytes per callback, in steps. This drives the relay app
as `bench.callback_cpu` does (Redis or SQLite state; the in-process HUD on SQLite, or on
PostgreSQL with `--relay-env`) in phases, each with bodies made for it and dropped
after, so that nothing the bench holds grows with the run. After each phase it collects
garbage and takes a tracemalloc snapshot (tracing starts after the first phase: imports
and first calls are not the question). It prints the traced heap per phase, then the net
growth from phase `--base` (caches fill in the first few) to the last, and the
tracebacks that grew most.
"""

from __future__ import annotations

import argparse
import gc
import os
import tracemalloc
from collections import Counter
from typing import Any

from bench.callback_cpu import add_world_options, callback_requests, run_in_world, send_all
from crcr.app import create_app
from crcr.config.logging_setup import configure_logging
from crcr.config.settings import load_settings
from crcr.ops.gc_tuning import freeze_what_exists, tune_for_serving

ACCEPTED = "200 " + repr(b'{"status":"accepted"}')
"""How `send_all` counts an accepted callback's answer."""


async def drive(args: argparse.Namespace, tokens: dict[str, list[str]]) -> None:
    app: Any = create_app(load_settings(), background=False, started=freeze_what_exists)
    tune_for_serving()
    snapshots: list[tracemalloc.Snapshot] = []
    jobs = args.per_phase // 2
    async with app.router.lifespan_context(app):
        for phase in range(args.phases):
            answers: Counter[str] = Counter()
            # The phase's bodies are made for it and gone once it returns.
            requests = callback_requests(args, tokens, phase * jobs, jobs)
            await send_all(app, requests, args.concurrency, answers)
            del requests
            if set(answers) != {ACCEPTED}:
                raise SystemExit(f"phase {phase}: not every callback was accepted: {answers}")
            if app.state.runtime.audit is not None:
                await app.state.runtime.audit.flush()
            gc.collect()
            if phase == 0:
                tracemalloc.start(args.frames)
                continue
            snapshots.append(tracemalloc.take_snapshot())
            traced = tracemalloc.get_traced_memory()[0]
            print(f"after phase {phase}: {traced / 1e6:.2f} MB traced", flush=True)
    report(snapshots[args.base - 1 :], args.per_phase)


def report(snapshots: list[tracemalloc.Snapshot], per_phase: int) -> None:
    """The net growth from the first snapshot to the last, and what grew most."""
    callbacks = per_phase * (len(snapshots) - 1)
    # The bench's own memory (its cache of dispatch payloads) is not the relay's.
    not_bench = [tracemalloc.Filter(False, f"{os.path.dirname(__file__)}/*", all_frames=True)]
    first, last = (snapshot.filter_traces(not_bench) for snapshot in (snapshots[0], snapshots[-1]))
    growth = last.compare_to(first, "traceback")
    net = sum(stat.size_diff for stat in growth)
    per_callback = net / callbacks
    print(f"\nthe relay's net growth over {callbacks:,} callbacks: {net:+,} B", end=" ")
    print(f"({per_callback:+.2f} B per callback)")
    for stat in growth[:6]:
        print(f"{stat.size_diff:+,} B in {stat.count_diff:+} objects, from:")
        for line in stat.traceback.format()[-6:]:
            print("   ", line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", type=int, default=11)
    parser.add_argument("--per-phase", type=int, default=4000, help="callbacks per phase")
    parser.add_argument("--base", type=int, default=3, help="the phase growth is counted from")
    parser.add_argument("--frames", type=int, default=8, help="traceback depth kept")
    add_world_options(parser)
    args = parser.parse_args()
    if not 1 <= args.base < args.phases - 1:
        parser.error("--base: a phase after the first and before the last")
    configure_logging("warning", "json")
    run_in_world(args, drive)


if __name__ == "__main__":
    main()
