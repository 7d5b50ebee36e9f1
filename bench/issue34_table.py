"""Re-measure every row of issue 34's table and print it as a markdown table.

Run: `bench/issue34_table.sh [--seconds 8] [--callbacks 3000] [--events 10]` (or
`python -m bench.issue34_table`), best on a quiet machine: it prints the load average
before and after, since a loaded machine's numbers compare nothing. Each row is one run
of the benchmark that owns it, in its own process, with the command line shown:

- `bench.callback_cpu` (in-process CPU per callback: Redis state, SQLite HUD, defaults),
  beside `bench.callback_floor` (the same machine's floor: RS256, one parse, one Redis
  round trip, one HUD upsert, each alone);
- `bench.callbacks` (in-process HUD) and `bench.hud_http --hud stub` (HUD over HTTPS),
  1 and 2 workers at concurrency 64, whose relay CPU column gives the relay-CPU row;
- `bench.fanout` at N = 100 and 1,000, GitHub answering after 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

GOALS = {
    "cpu": "≤ 450 µs",
    "https1": "within 20 % of in-process, p99 ≤ 50 ms",
    "https2": "≥ 1,500/s, p99 ≤ 50 ms",
    "inproc2": "≥ 3,500/s, p99 ≤ 30 ms",
    "relay_cpu": "≤ 0.6 ms",
    "fanout": "N=1000 ≤ 450 ms; N=100 ≤ 80 ms",
}


def run(command: list[str]) -> str:
    """Run one benchmark; its output (echoed to stderr so progress shows)."""
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    sys.stderr.write(done.stdout)
    return done.stdout


def python(module: str, *options: str) -> list[str]:
    return [sys.executable, "-m", module, *options]


def callbacks_row(module: str, workers: int, args: argparse.Namespace, *extra: str) -> Any:
    """One `bench.callbacks`-style run at concurrency 64; its summary."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = Path(out.name)
    options = ["--concurrency", "64", "--seconds", str(args.seconds), "--workers", str(workers)]
    command = python(module, *extra, *options, "--serve-option=--no-access-log")
    run([*command, "--json", str(path)])
    summary = json.loads(path.read_text())[0]
    path.unlink()
    summary["command"] = " ".join(command[2:])
    return summary


def rate(summary: Any) -> str:
    """Throughput and p99, flagged when not every callback was accepted."""
    refused = summary["requests"] - summary["accepted"]
    flag = f" ({refused} not accepted: {summary['statuses']})" if refused else ""
    return f"{summary['rate']:,.0f}/s p99 {summary['p99_ms']:.0f} ms{flag}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--callbacks", type=int, default=3000)
    parser.add_argument("--events", type=int, default=10, help="warm fan-out events per size")
    args = parser.parse_args()
    load_before = os.getloadavg()

    cpu_command = python("bench.callback_cpu", "--callbacks", str(args.callbacks))
    cpu = re.search(r"(\d+) µs CPU each", run(cpu_command))
    floor_command = python("bench.callback_floor")
    floor = re.search(r"\*\*floor\*\* \| \*\*(\d+)\*\*", run(floor_command))
    inproc1 = callbacks_row("bench.callbacks", 1, args)
    inproc2 = callbacks_row("bench.callbacks", 2, args)
    https1 = callbacks_row("bench.hud_http", 1, args, "--hud", "stub")
    https2 = callbacks_row("bench.hud_http", 2, args, "--hud", "stub")
    fanout_command = python("bench.fanout", "--sizes", "100", "1000", "--events", str(args.events))
    fanout_command += ["--colds", "1"]
    fanout = re.findall(
        r"^\s*(\d+)\s+\S+\s+\S+\s+\S+\s+(\d+)ms\s+(\d+)ms", run(fanout_command), re.M
    )

    share = 100 * https1["rate"] / inproc1["rate"]
    rows = [
        ("`bench.callback_cpu` CPU per callback, in-process", f"{cpu[1] if cpu else '?'} µs "
         f"(this machine's floor {floor[1] if floor else '?'} µs)", "cpu",
         f"{' '.join(cpu_command[2:])}; {' '.join(floor_command[2:])}"),
        ("HUD over HTTPS, 1 worker, c=64", f"{rate(https1)} ({share:.0f} % of in-process "
         f"{rate(inproc1)})", "https1", f"{https1['command']}; {inproc1['command']}"),
        ("the same, 2 workers", rate(https2), "https2", https2["command"]),
        ("in-process HUD, 2 workers, c=64", rate(inproc2), "inproc2", inproc2["command"]),
        ("relay CPU per callback, HUD over HTTPS, c=64", f"{https1['relay_ms']:.2f} ms "
         f"(2 workers {https2['relay_ms']:.2f} ms)", "relay_cpu", "the HTTPS rows' relay column"),
        ("fan-out warm p50 / p99, GitHub at 50 ms", "; ".join(
            f"N={n} {p50} / {p99} ms" for n, p50, p99 in fanout) or "?", "fanout",
         " ".join(fanout_command[2:])),
    ]  # fmt: skip
    print(f"\nload average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print("| measure | now | goal | command |\n|---|---|---|---|")
    for measure, value, goal, command in rows:
        print(f"| {measure} | {value} | {GOALS[goal]} | `{command}` |")


if __name__ == "__main__":
    main()
