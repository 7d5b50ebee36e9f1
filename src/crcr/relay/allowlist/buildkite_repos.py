"""The allowlist's `buildkite_repos` mapping (org/pipeline → owner/repo), checked.

The reference maps Buildkite pipelines there; crcr takes that mapping from operator
configuration only (SPEC §2, `CRCR_OIDC_ISSUERS`), so it is validated and kept, not
used. Apart from `model` so that the model stays readable in one sitting.
"""

from __future__ import annotations

from collections.abc import Callable

from crcr.relay.allowlist.syntax import pipeline_problem, repo_problem, type_name

ProblemAt = Callable[[str, tuple[int | str, ...], str], None]
"""Records one problem: (level or section, entry index or keys, message)."""


def read_buildkite_repos(raw: object, problem: ProblemAt) -> dict[str, str]:
    """The mapping, with every problem recorded against `buildkite_repos`."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        message = f"must be a mapping of org/pipeline → owner/repo, got {type_name(raw)}"
        problem("buildkite_repos", (), message)
        return {}
    pipelines: dict[str, str] = {}
    for key, repo in raw.items():
        where = (str(key),)
        if not isinstance(key, str) or pipeline_problem(key):
            problem("buildkite_repos", where, "key must be an org/pipeline slug")
        trouble = repo_problem(repo) if isinstance(repo, str) else "must be an owner/repo string"
        if trouble:
            problem("buildkite_repos", where, trouble)
        elif isinstance(key, str):
            pipelines[key] = repo
    return pipelines
