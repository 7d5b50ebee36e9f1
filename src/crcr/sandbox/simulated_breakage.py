"""Simulated backends broken from an upstream commit on (SPEC §14's demo and tests).

A backend told "broken from X" fails every job of a run whose upstream commit is X or
descends from X in the sandbox upstream's history, and runs its workflow as usual on
earlier commits: a post-merge break a bisection can find.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from crcr.sandbox.github_history import ancestors
from crcr.sandbox.github_model import Dispatch
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.simulated_ci_model import OutcomeRates, WorkflowSpec

ALWAYS_FAILS = OutcomeRates(failure=1.0)


def tested_commit(client_payload: Mapping[str, Any]) -> tuple[str, str] | None:
    """(upstream repo, commit) a dispatch tests: a push's `after`, a PR's head SHA."""
    payload = client_payload.get("payload")
    if not isinstance(payload, Mapping):
        return None
    repository = payload.get("repository")
    upstream = repository.get("full_name") if isinstance(repository, Mapping) else None
    sha = payload.get("after")
    pull = payload.get("pull_request")
    if not isinstance(sha, str) and isinstance(pull, Mapping):
        head = pull.get("head")
        sha = head.get("sha") if isinstance(head, Mapping) else None
    if not isinstance(upstream, str) or not isinstance(sha, str):
        return None
    return upstream, sha.lower()


def is_broken(github: SandboxGitHub, dispatch: Dispatch, broken_from: str) -> bool:
    """Whether the dispatch's commit is `broken_from` or one of its descendants."""
    tested = tested_commit(dispatch.client_payload)
    if tested is None or not github.has_repo(tested[0]):
        return False
    upstream, sha = tested
    with github.lock:
        return broken_from.lower() in ancestors(github.repo(upstream), sha)


def spec_for(
    github: SandboxGitHub, spec: WorkflowSpec, dispatch: Dispatch, broken_from: str | None
) -> WorkflowSpec:
    """`spec` as it runs for this dispatch: every job failing when its commit is broken."""
    if broken_from is None or not is_broken(github, dispatch, broken_from):
        return spec
    jobs = tuple(replace(job, outcomes=None) for job in spec.jobs)
    return replace(spec, jobs=jobs, outcomes=ALWAYS_FAILS)
