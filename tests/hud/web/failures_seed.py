"""Known failures for the failure-detail page tests, posted to the HUD's real ingestion API.

What the pages must show, worked out here beside the data:

- Pushes to main first: northwind/xpu-backend's `test` passed, acme/rocm's `test` failed
  (naming `test_conv`). zeta/npu has no push result at all.
- Then PR 500 (head `SHA`):
  - northwind/xpu-backend `test` fails naming `test_conv` and `test_mm` → `new`; its
    triage verdict (category upstream) suspects PR 500, with one safe and one unsafe
    evidence link. Its `build` reported success, which GitHub contradicts (failure).
  - acme/rocm `test` fails naming `test_conv` → `already_failing`; its `lint` failed,
    then passed on re-run → `flaky`.
  - zeta/npu `test` fails → `unknown`.
- So the lead line: 3 backends fail: 1 new (northwind), 1 already failing on main
  (acme/rocm), 1 with no result from main (zeta/npu), and 1 flaky job.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from tests.hud.web.seed import Clock, Result, result_body

PR = 500
SHA = "5005005005005005005005005005005005005005"
MAIN_SHA = "ma1e000000000000000000000000000000000000"
NORTHWIND, ROCM, ZETA = "northwind/xpu-backend", "acme/rocm", "zeta/npu"
SAFE_LOG = "https://ci.northwind.example/logs/77"
VERDICT = {
    "schema_version": "1",
    "category": "upstream",
    "confidence": "high",
    "summary": "conv2d output changed after the upstream rewrite",
    "suspected_upstream": {"pr": PR, "reason": "touches aten/src/ATen/native/Convolution.cpp"},
    "evidence": [
        {"job": "test", "test": "test_conv", "log_url": SAFE_LOG},
        {"job": "test", "test": "test_mm", "excerpt": "AssertionError: mismatch"},
    ],
}


def _push(repo: str, job: str, conclusion: str) -> Result:
    return Result(repo, "L3", 0, MAIN_SHA, job, conclusion, event="push", run_id=f"p-{repo}")


def _pr(repo: str, job: str, conclusion: str, attempt: int = 1) -> Result:
    return Result(repo, "L4", PR, SHA, job, conclusion, attempt=attempt, run_id=f"r-{repo}")


def _with(body: dict[str, Any], **workflow: Any) -> dict[str, Any]:
    body = copy.deepcopy(body)
    body["untrusted"]["callback_payload"]["workflow"].update(workflow)
    return body


def _tests(*names: str) -> dict[str, Any]:
    return {"passed": 40, "failed": len(names), "failed_tests": [{"name": n} for n in names]}


def bodies(now: datetime) -> list[dict[str, Any]]:
    """Every body, in the order the HUD learns of them."""
    build_ok = result_body(_pr(NORTHWIND, "build", "success"), now)
    contradicted = copy.deepcopy(build_ok)
    contradicted["trusted"]["confirmed"] = False
    contradicted["trusted"]["confirmation"] = {
        "github_conclusion": "failure",
        "checked_at": now.isoformat(),
    }
    return [
        result_body(_push(NORTHWIND, "test", "success"), now),
        _with(result_body(_push(ROCM, "test", "failure"), now), test_results=_tests("test_conv")),
        _with(
            result_body(_pr(NORTHWIND, "test", "failure"), now),
            test_results=_tests("test_conv", "test_mm"),
            triage_verdict=VERDICT,
        ),
        build_ok,
        contradicted,
        _with(result_body(_pr(ROCM, "test", "failure"), now), test_results=_tests("test_conv")),
        result_body(_pr(ROCM, "lint", "failure"), now),
        result_body(_pr(ROCM, "lint", "success", attempt=2), now),
        result_body(replace(_pr(ZETA, "test", "failure"), level="L2"), now),
    ]


def seed(client: httpx.Client, token: str, clock: Clock) -> None:
    """POST the bodies a second apart, so each is newer than the one before."""
    now = datetime.now(UTC)
    sent = bodies(now)
    for index, body in enumerate(sent):
        clock.now = now - timedelta(seconds=len(sent) - index)
        response = client.post(
            "/api/crcr/results", json=body, headers={"x-hud-internal-bot": token}
        )
        assert response.status_code == 200, response.text
    clock.now = now
