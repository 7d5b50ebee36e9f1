"""`crcr init downstream` writes a working crcr workflow into a downstream repository."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from crcr.init import cli as init_cli
from crcr.init.workflow import DEFAULT_ACTION, PLACEHOLDER_CALLBACK_URL, TEMPLATES

ACTION = "my-org/crcr/action/crcr-report@v1"
CALLBACK_URL = "https://relay.example.com/github/callback"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """A root, so that `init` stays a subcommand."""

    init_cli.register(app)
    return app


def init(app: typer.Typer, repo: Path, *arguments: str) -> Any:
    return CliRunner().invoke(app, ["init", "downstream", "--path", str(repo), *arguments])


def load_workflow(repo: Path) -> dict[str, Any]:
    workflow: dict[str, Any] = yaml.safe_load((repo / ".github/workflows/crcr.yml").read_text())
    # YAML 1.1 reads the bare key `on` as the boolean true; GitHub reads it as "on".
    workflow["on"] = workflow.pop(True)
    return workflow


def report_steps(job: dict[str, Any], action: str = ACTION) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if str(step.get("uses", "")).startswith(action)]


DISPATCHED = "github.event_name == 'repository_dispatch'"


@pytest.mark.parametrize("template", TEMPLATES)
def test_each_template_is_a_dispatch_workflow_whose_jobs_report_start_and_end(
    app: typer.Typer, tmp_path: Path, template: str
) -> None:
    result = init(
        app, tmp_path, "--template", template, "--action", ACTION, "--callback-url", CALLBACK_URL
    )

    assert result.exit_code == 0, result.output
    assert f"wrote {tmp_path / '.github/workflows/crcr.yml'} (template {template})" in result.output
    workflow = load_workflow(tmp_path)
    assert workflow["on"]["repository_dispatch"]["types"] == [
        "pull_request",
        "push",
        "crcr_bisect",  # SPEC §14: culprit finding and the noise floor send pushes too
        "crcr_aa",
    ]
    assert workflow["permissions"]["id-token"] == "write"
    assert workflow["env"]["CRCR_CALLBACK_URL"] == CALLBACK_URL
    assert workflow["jobs"]
    for name, job in workflow["jobs"].items():
        setup, first, *_, last = job["steps"]
        assert setup["uses"] == "actions/setup-python@v5", f"{name} runs the action on Python"
        assert first in report_steps(job), f"{name} does not report in_progress first"
        assert first["with"]["status"] == "in_progress"
        assert first["if"] == DISPATCHED
        assert last in report_steps(job), f"{name} does not report completed last"
        assert last["with"]["status"] == "completed"
        assert last["with"]["conclusion"] == "${{ job.status }}"
        assert last["if"] == f"always() && {DISPATCHED}", f"{name} would not report a failure"
        for step in report_steps(job):
            assert step["with"]["callback-url"] == "${{ env.CRCR_CALLBACK_URL }}"


@pytest.mark.parametrize("template", TEMPLATES)
def test_each_template_runs_by_hand_with_a_chosen_upstream_ref_and_python(
    app: typer.Typer, tmp_path: Path, template: str
) -> None:
    init(app, tmp_path, "--template", template, "--action", ACTION)

    workflow = load_workflow(tmp_path)
    inputs = workflow["on"]["workflow_dispatch"]["inputs"]
    assert {"upstream_repo", "upstream_ref", "python_version"} <= set(inputs)
    assert "inputs.upstream_ref" in workflow["env"]["UPSTREAM_REF"]
    assert "inputs.python_version" in workflow["env"]["PYTHON_VERSION"]
    setups = [job["steps"][0]["with"]["python-version"] for job in workflow["jobs"].values()]
    assert all(v in ("${{ env.PYTHON_VERSION }}", "${{ matrix.python }}") for v in setups)


@pytest.mark.parametrize("template", TEMPLATES)
def test_runs_for_two_upstream_repositories_never_share_a_concurrency_group(
    app: typer.Typer, tmp_path: Path, template: str
) -> None:
    init(app, tmp_path, "--template", template, "--action", ACTION)

    group = load_workflow(tmp_path)["concurrency"]["group"]
    assert "github.event.client_payload.payload.repository.full_name" in group
    assert "pull_request.number" in group


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_placeholder_survives_when_both_values_are_given(
    app: typer.Typer, tmp_path: Path, template: str
) -> None:
    init(app, tmp_path, "--template", template, "--action", ACTION, "--callback-url", CALLBACK_URL)

    text = (tmp_path / ".github/workflows/crcr.yml").read_text()
    assert "OWNER" not in text
    assert PLACEHOLDER_CALLBACK_URL not in text


def expand(expression: str, leg: dict[str, Any]) -> str:
    """Substitute `${{ matrix.x }}` the way GitHub does for one leg."""
    return re.sub(r"\$\{\{ matrix\.(\w+) \}\}", lambda m: str(leg[m.group(1)]), expression)


def test_the_matrix_legs_report_under_distinct_job_names(app: typer.Typer, tmp_path: Path) -> None:
    init(app, tmp_path, "--template", "matrix", "--action", ACTION)

    (job,) = load_workflow(tmp_path)["jobs"].values()
    matrix: dict[str, Any] = dict(job["strategy"]["matrix"])
    # A run by hand narrows the Python versions (an expression); dispatches use its fallback.
    fallback = re.search(r"\|\| '(\[.*?\])'", matrix["python"])
    assert fallback is not None, matrix["python"]
    matrix["python"] = json.loads(fallback.group(1))
    names_in_steps = {step["with"]["job-name"] for step in report_steps(job)}
    (pattern,) = names_in_steps  # in_progress and completed report under the same name
    legs = [
        dict(zip(matrix, values, strict=True)) for values in itertools.product(*matrix.values())
    ]
    leg_names = {expand(pattern, leg) for leg in legs}
    assert len(legs) > 1
    assert len(leg_names) == len(legs)
    assert job["strategy"]["fail-fast"] is False


def test_build_then_test_publishes_wheels_and_tests_them_on_a_gpu_runner(
    app: typer.Typer, tmp_path: Path
) -> None:
    init(app, tmp_path, "--template", "build-test", "--action", ACTION)

    jobs = load_workflow(tmp_path)["jobs"]
    build, test = jobs["build"], jobs["test"]
    upstream_checkout = next(
        s for s in build["steps"] if s.get("with", {}).get("path") == "upstream"
    )
    assert upstream_checkout["with"]["ref"] == "${{ env.UPSTREAM_REF }}"
    assert report_steps(build)[-1]["with"]["artifact-url"] == (
        "${{ steps.wheels.outputs.artifact-url }}"
    )
    assert test["needs"] == "build"
    assert "gpu" in test["runs-on"]
    assert any("--find-links wheelhouse" in str(s.get("run", "")) for s in test["steps"])
    completed = report_steps(test)[-1]["with"]
    assert completed["artifact-url"] == "${{ steps.reports.outputs.artifact-url }}"
    assert completed["failed-tests"] == "reports/junit.xml"


def test_wheels_builds_tests_on_an_accelerator_then_publishes_a_find_links_index(
    app: typer.Typer, tmp_path: Path
) -> None:
    init(app, tmp_path, "--template", "wheels", "--action", ACTION)

    workflow = load_workflow(tmp_path)
    build, test, publish = (workflow["jobs"][name] for name in ("build", "test", "publish"))
    assert (test["needs"], publish["needs"]) == ("build", "test")
    assert "gpu" in test["runs-on"]
    inputs = workflow["on"]["workflow_dispatch"]["inputs"]
    assert inputs["build_vision"]["type"] == inputs["build_audio"]["type"] == "boolean"
    assert any(step.get("if") == "inputs.build_vision" for step in build["steps"])
    assert any("index.html" in str(step.get("run", "")) for step in publish["steps"])
    assert publish["outputs"]["index-url"] == "${{ steps.deploy.outputs.page_url }}"
    assert publish["permissions"]["id-token"] == "write"
    assert report_steps(publish)[-1]["with"]["artifact-url"] == (
        "${{ steps.deploy.outputs.page_url }}"
    )
    for job in (build, test, publish):
        statuses = [step["with"]["status"] for step in report_steps(job)]
        assert statuses == ["in_progress", "completed"]


def test_an_existing_workflow_is_kept_without_force(app: typer.Typer, tmp_path: Path) -> None:
    workflow = tmp_path / ".github/workflows/crcr.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("# ours\n")

    refused = init(app, tmp_path, "--template", "matrix")
    assert refused.exit_code == 2
    assert refused.output == (
        f"crcr init downstream: {workflow} exists; pass --force to overwrite it\n"
    )
    assert workflow.read_text() == "# ours\n"

    forced = init(app, tmp_path, "--template", "matrix", "--force")
    assert forced.exit_code == 0
    assert "strategy:" in workflow.read_text()


def test_by_default_the_jobs_report_with_crcrs_v1_action(app: typer.Typer, tmp_path: Path) -> None:
    result = init(app, tmp_path)

    assert result.exit_code == 0
    assert DEFAULT_ACTION.endswith("/action/crcr-report@v1")
    (job,) = load_workflow(tmp_path)["jobs"].values()
    assert len(report_steps(job, DEFAULT_ACTION)) == 2
    assert "set CRCR_CALLBACK_URL" in result.output
    assert "uses:" not in result.output  # nothing about the action is left to edit


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--template", "huge"], "--template must be one of minimal, matrix, build-test, wheels"),
        (["--callback-url", "relay.example.com"], "--callback-url must be an http(s) URL"),
        (["--callback-url", "https://x.org/cb\non: push"], "--callback-url must be an http(s) URL"),
        (["--action", "crcr-report"], "--action must look like owner/repo/path@ref or ./path"),
        (["--action", "o/r@v1 # x"], "--action must look like owner/repo/path@ref or ./path"),
    ],
)
def test_a_bad_option_is_one_line_and_writes_nothing(
    app: typer.Typer, tmp_path: Path, arguments: list[str], message: str
) -> None:
    result = init(app, tmp_path, *arguments)

    assert result.exit_code == 2
    assert result.output.startswith(f"crcr init downstream: {message}")
    assert result.output.count("\n") == 1
    assert not (tmp_path / ".github").exists()


def test_a_missing_directory_is_one_line(app: typer.Typer, tmp_path: Path) -> None:
    result = init(app, tmp_path / "nowhere")

    assert result.exit_code == 2
    assert (
        result.output
        == f"crcr init downstream: --path '{tmp_path / 'nowhere'}' is not a directory\n"
    )


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("action", [ACTION, "./.github/actions/crcr-report"])
def test_the_action_given_is_the_only_one_every_report_step_uses(
    app: typer.Typer, tmp_path: Path, template: str, action: str
) -> None:
    result = init(app, tmp_path, "--template", template, "--action", action)

    text = (tmp_path / ".github/workflows/crcr.yml").read_text()
    assert result.exit_code == 0, result.output
    assert DEFAULT_ACTION.rpartition("@")[0] not in text  # no step, no comment left on it
    reports = [
        step["uses"]
        for job in load_workflow(tmp_path)["jobs"].values()
        for step in job.get("steps", [])
        if "crcr-report" in str(step.get("uses", ""))
    ]
    assert reports and set(reports) == {action}
    assert f"action: the {len(reports)} report steps use {action}" in result.output


def test_the_default_action_is_named_with_how_to_use_another(
    app: typer.Typer, tmp_path: Path
) -> None:
    default = init(app, tmp_path).output
    own = init(app, tmp_path, "--force", "--action", ACTION).output

    assert f"use {DEFAULT_ACTION}" in default and "--action OWNER/REPO" in default
    assert f"use {ACTION}" in own and "--action OWNER/REPO" not in own


def test_cancel_on_supersede_writes_the_companion_that_cancels_a_superseded_heads_runs(
    app: typer.Typer, tmp_path: Path
) -> None:
    result = init(app, tmp_path, "--action", ACTION, "--cancel-on-supersede")

    assert result.exit_code == 0, result.output
    written = tmp_path / ".github/workflows/crcr-cancel.yml"
    assert f"wrote {written} (template cancel-on-supersede)" in result.output
    cancel: dict[str, Any] = yaml.safe_load(written.read_text())
    cancel["on"] = cancel.pop(True)
    assert cancel["on"]["repository_dispatch"]["types"] == ["crcr_cancel"]  # SPEC §15
    assert cancel["permissions"] == {"actions": "write"}
    (step,) = cancel["jobs"]["cancel"]["steps"]
    assert step["env"]["DELIVERY_ID"] == "${{ github.event.client_payload.cancel.delivery_id }}"
    assert "gh run cancel" in step["run"]
    assert '--arg title "crcr $DELIVERY_ID"' in step["run"]
    # ... and the main workflow names its runs the way the companion looks them up.
    main = load_workflow(tmp_path)
    assert main["run-name"] == "crcr ${{ github.event.client_payload.delivery_id || 'by hand' }}"
