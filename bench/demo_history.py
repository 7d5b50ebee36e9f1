"""How long `crcr demo --history DAYS` takes to store its simulated past, and to judge it.

Run: `python -m bench.demo_history [--days 14] [--repeat 3]`. A fresh embedded HUD
(SQLite in a temporary directory) per run, the history stored through the HUD's ingest
path as the demo does, then one level status read; prints the timings of each run.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from crcr.config.settings import load_settings
from crcr.demo.levels import backfill_history
from crcr.hud.component import open_hud


async def one_run(days: int, seed: int) -> tuple[int, float, float]:
    """Results stored, seconds to store them, seconds for the level status after."""
    with tempfile.TemporaryDirectory() as directory:
        settings = load_settings(data_dir=Path(directory), database_url=None)
        hud = await open_hud(settings, retention=False)
        try:
            started = time.perf_counter()
            stored = await backfill_history(hud, days, random.Random(seed))
            stored_in = time.perf_counter() - started
            started = time.perf_counter()
            await hud.level_status()
            return stored, stored_in, time.perf_counter() - started
        finally:
            await hud.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for run in range(args.repeat):
        stored, stored_in, judged_in = asyncio.run(one_run(args.days, run))
        print(
            f"{args.days} days: {stored} results stored in {stored_in:.2f} s, "
            f"level status {judged_in * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
