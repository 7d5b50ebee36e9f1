"""What failure detail (SPEC §11) costs: parsing a callback that carries it, reading JUnit.

Run: `python -m bench.failure_detail [--repeat 2000]`.

Times `parse_callback` (the schema step every callback takes, where failed tests are
bounded and the triage verdict sanitised) on the benchmark's ~26 KB `completed` body,
without failure detail and with the most a downstream may send and have kept (100
failed tests with 2,000-character messages, a verdict with 10 evidence items), and
`read_junit` on a pytest-shaped report of 10,000 test cases of which 500 failed.
Microseconds per call, the median of 5 rounds of `--repeat` calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from bench.callback_load import bench_repos, callback_body, job
from crcr.relay.callback.schema import parse_callback
from crcr.reporter.junit import read_junit

VERDICT = {
    "schema_version": 1,
    "category": "upstream",
    "confidence": "high",
    "summary": "s" * 1000,
    "suspected_upstream": {"pr": 123456, "reason": "r" * 300},
    "evidence": [
        {
            "job": f"test ({n}, 10)",
            "test": f"test_ops.TestCommon.test_case_{n}",
            "excerpt": "e" * 1000,
            "log_url": f"https://github.com/org/repo/actions/runs/1/job/{n}",
        }
        for n in range(10)
    ],
    "analyzer": {"name": "triage", "version": "1", "model": "m", "prompt_version": "3"},
    "analyzed_at": "2026-11-25T10:00:00Z",
}


def with_detail(body: bytes) -> bytes:
    """The same body with the largest failure detail that is kept whole."""
    document = json.loads(body)
    document["workflow"]["test_results"]["failed_tests"] = [
        {
            "name": f"test_ops.TestCommon.test_case_{n}",
            "file": "test/test_ops.py",
            "message": "m" * 2000,
        }
        for n in range(100)
    ]
    document["workflow"]["triage_verdict"] = VERDICT
    return json.dumps(document).encode()


def junit_report(cases: int, failures: int) -> bytes:
    """A pytest-shaped JUnit report."""
    parts = ['<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">']
    for n in range(cases):
        parts.append(f'<testcase classname="test_ops.TestCommon" name="test_{n}" time="0.01">')
        if n < failures:
            parts.append(f'<failure message="AssertionError: case {n}">traceback {n}</failure>')
        parts.append("</testcase>")
    parts.append("</testsuite></testsuites>")
    return "".join(parts).encode()


def per_call_us(work: Callable[[], object], repeat: int) -> float:
    """Median over 5 rounds of the microseconds one call takes."""
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(repeat):
            work()
        rounds.append((time.perf_counter() - started) / repeat * 1e6)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    plain = callback_body(job(0, bench_repos(50), 100), "completed")
    detailed = with_detail(plain)
    report = junit_report(10_000, 500)
    print(f"callback body: {len(plain):,} bytes plain, {len(detailed):,} with failure detail")
    plain_us = per_call_us(lambda: parse_callback(plain), args.repeat)
    detailed_us = per_call_us(lambda: parse_callback(detailed), args.repeat)
    print(f"parse_callback, plain:        {plain_us:8.1f} µs")
    print(f"parse_callback, with detail:  {detailed_us:8.1f} µs")
    junit_us = per_call_us(lambda: read_junit(report), max(1, args.repeat // 200))
    print(f"read_junit, 10,000 cases:     {junit_us / 1000:8.1f} ms ({len(report):,} bytes)")


if __name__ == "__main__":
    main()
