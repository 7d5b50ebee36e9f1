"""Realistic CI environments for the reporter's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

DISPATCH_EVENT = (
    Path(__file__).parents[1] / "fixtures" / "reporter" / ("repository_dispatch_pull_request.json")
)


@pytest.fixture
def dispatch_event() -> Path:
    """A saved repository_dispatch event as the relay's dispatch produces it."""
    return DISPATCH_EVENT


@pytest.fixture
def github_env(tmp_path: Path) -> dict[str, str]:
    """The variables a GitHub-hosted runner sets for a repository_dispatch job."""
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    return {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "repository_dispatch",
        "GITHUB_EVENT_PATH": str(DISPATCH_EVENT),
        "GITHUB_WORKFLOW": "XPU CI",
        "GITHUB_REPOSITORY": "intel/xpu-backend",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "9876543210",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_JOB": "test",
        "RUNNER_TEMP": str(runner_temp),
    }


@pytest.fixture
def buildkite_env() -> dict[str, str]:
    """The variables the Buildkite agent sets for a job."""
    return {
        "CI": "true",
        "BUILDKITE": "true",
        "BUILDKITE_PIPELINE_SLUG": "xpu-nightly",
        "BUILDKITE_PIPELINE_NAME": "XPU nightly",
        "BUILDKITE_LABEL": ":pytorch: test xpu",
        "BUILDKITE_STEP_KEY": "test-xpu",
        "BUILDKITE_BUILD_URL": "https://buildkite.com/intel/xpu-nightly/builds/812",
        "BUILDKITE_BUILD_ID": "0190a3c2-7e1f-4b8a-9c3d-5e6f7a8b9c0d",
        "BUILDKITE_JOB_ID": "0190a3c2-8a2b-4c9d-8e0f-1a2b3c4d5e6f",
        "BUILDKITE_RETRY_COUNT": "1",
    }
