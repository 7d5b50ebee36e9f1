"""Simulated backends broken from an upstream commit on (SPEC §14's demo and tests).

A backend told "broken from X" runs the default branch deterministically: every job of
a push-shaped run (`push`, `crcr_bisect`, `crcr_aa`) fails when its commit is X or
descends from X in the sandbox upstream's history, and passes otherwise — a post-merge
break with no noise around it, which a bisection can find every time. A push of a
commit the history does not know (the demo's made-up traffic) tests the branch as it
stands. Pull-request runs keep the backend's usual workflow.
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
ALWAYS_PASSES = OutcomeRates()


def tested_commit(client_payload: Mapping[str, Any]) -> tuple[str, str] | None:
    """(upstream repo, commit) a push-shaped dispatch tests: the payload's `after`."""
    payload = client_payload.get("payload")
    if not isinstance(payload, Mapping):
        return None
    repository = payload.get("repository")
    upstream = repository.get("full_name") if isinstance(repository, Mapping) else None
    sha = payload.get("after")
    if not isinstance(upstream, str) or not isinstance(sha, str):
        return None
    return upstream, sha.lower()


def is_broken(github: SandboxGitHub, dispatch: Dispatch, broken_from: str) -> bool | None:
    """Whether the dispatch's commit is `broken_from` or one of its descendants (None: it
    is no push-shaped run of a known upstream)."""
    tested = tested_commit(dispatch.client_payload)
    if tested is None or not github.has_repo(tested[0]):
        return None
    upstream, sha = tested
    with github.lock:
        repo = github.repo(upstream)
        if sha not in repo.commits:
            sha = repo.refs.get(repo.default_branch, sha)
        return broken_from.lower() in ancestors(repo, sha)


def spec_for(
    github: SandboxGitHub, spec: WorkflowSpec, dispatch: Dispatch, broken_from: str | None
) -> WorkflowSpec:
    """`spec` as it runs for this dispatch: failing where broken, passing where not."""
    broken = None if broken_from is None else is_broken(github, dispatch, broken_from)
    if broken is None:
        return spec
    jobs = tuple(replace(job, outcomes=None, broken_tests=()) for job in spec.jobs)
    return replace(spec, jobs=jobs, outcomes=ALWAYS_FAILS if broken else ALWAYS_PASSES)
