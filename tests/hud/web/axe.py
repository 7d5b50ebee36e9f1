"""The accessibility audit: axe-core (npm, pinned in package.json) run inside a real page.

Any page test can call `audit(page)` after it has loaded a page; the audit covers the
rule sets the HUD promises (WCAG 2.1 A and AA, and axe's best practices, which include
its contrast and landmark rules) and returns what axe found, or `assert_accessible`
fails with a readable list. The script is injected through the DevTools protocol, not
as a `<script>` tag, so the pages' Content-Security-Policy (no inline script) stays on.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

AXE = Path(__file__).resolve().parents[3] / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice")


@cache
def axe_source() -> str:
    """axe.min.js as text; missing means `make install` was not run (fails in CI)."""
    if not AXE.exists():
        reason = f"axe-core is not installed at {AXE} (run `make install`)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return AXE.read_text(encoding="utf-8")


def audit(page: Page) -> list[dict[str, Any]]:
    """Run axe over the whole loaded page; its violations (empty when it passes).

    Every `<details>` is opened first: axe skips hidden content, and what a reader can
    unfold (earlier attempts, failed tests, the charts' figures) must pass too.
    """
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    result: dict[str, Any] = page.evaluate(
        """tags => axe.run(document, {
            runOnly: {type: "tag", values: tags},
            resultTypes: ["violations"],
        })""",
        list(TAGS),
    )
    violations: list[dict[str, Any]] = result["violations"]
    return violations


def describe(violations: list[dict[str, Any]]) -> str:
    """One line per failing element: the rule, why, and where."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            summary = (node.get("failureSummary") or "").replace("\n", " ")
            lines.append(f"{violation['id']}: {' '.join(node['target'])} — {summary[:200]}")
    return "\n".join(lines)


def assert_accessible(page: Page, label: str) -> None:
    """Fail with every violation axe finds on the page, named by rule and element."""
    violations = audit(page)
    assert not violations, f"{label}: {len(violations)} axe rule(s) fail\n{describe(violations)}"
