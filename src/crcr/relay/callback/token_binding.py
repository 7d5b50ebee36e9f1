"""Tie what a callback body claims about its run to what its verified token says, pure.

The token is signed by the CI system; the body is whatever the downstream wrote. Where
both name the same thing (the run, its attempt, the run's page), the token wins.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from crcr.oidc.claims import VerifiedIdentity
from crcr.relay.allowlist.model import TokenConstraints
from crcr.relay.callback.schema import ParsedCallback
from crcr.web.refusal import Invalid
from crcr.web.web_urls import actions_run_url, is_run_url_of


class NotThisRepository(Exception):
    """The token speaks for a repository, but not the one (or workflow) allowlisted (403)."""


def check_constraints(
    identity: VerifiedIdentity, constraints: TokenConstraints, learned_id: str | None
) -> None:
    """Refuse a token that the allowlist entry's constraints (or the learned id) exclude.

    The repository id is checked against the allowlist's, else the one learned when the
    name was first seen: a repository renamed away, or deleted and re-created under the
    same name by someone else, keeps no level. `workflow` and `ref` let an L3/L4 entry
    say which workflow may set its checks, so that any branch's workflow cannot.
    """
    if identity.issuer_kind != "github":
        return
    claims = identity.claims
    expected_id = constraints.repository_id or learned_id
    actual_id = str(claims.get("repository_id") or "")
    if expected_id is not None and actual_id != expected_id:
        raise NotThisRepository(
            f"token repository_id {actual_id or '(none)'} is not the id {identity.repo} "
            "is allowlisted with (renamed or re-created repository?)"
        )
    for claim, pattern in (("job_workflow_ref", constraints.workflow), ("ref", constraints.ref)):
        value = claims.get(claim)
        if pattern is not None and not (isinstance(value, str) and fnmatchcase(value, pattern)):
            raise NotThisRepository(
                f"token {claim} does not match the allowlist's {claim.removeprefix('job_')} "
                f"pattern for {identity.repo}"
            )


def check_run_matches_token(identity: VerifiedIdentity, callback: ParsedCallback) -> None:
    """Refuse a body whose run id or attempt differs from the token's (GitHub tokens)."""
    if identity.issuer_kind != "github":
        return
    workflow = callback.body.workflow
    if identity.run_id is not None and workflow.run_id != identity.run_id:
        raise Invalid("workflow.run_id: does not match the token's run_id")
    attempt = identity.claims.get("run_attempt")
    if attempt is not None and workflow.run_attempt != str(attempt):
        raise Invalid("workflow.run_attempt: does not match the token's run_attempt")


def pinned_run_url(
    identity: VerifiedIdentity, callback: ParsedCallback, web_url: str
) -> str | None:
    """The run link to keep: for GitHub Actions, a page of the verified repository's run.

    A link elsewhere is replaced by the run's own page, which the relay can name from
    the token's repository and the run id. Other CI systems' links are kept as checked
    by the schema (plain web URLs).
    """
    workflow = callback.body.workflow
    if identity.issuer_kind != "github":
        return workflow.url
    if workflow.url and is_run_url_of(workflow.url, web_url, identity.repo, workflow.run_id):
        return workflow.url
    if not workflow.run_id.isdigit():
        return None
    return actions_run_url(web_url, identity.repo, workflow.run_id)


def with_pinned_run_url(
    identity: VerifiedIdentity, callback: ParsedCallback, web_url: str
) -> ParsedCallback:
    """`callback`, its run link pinned (the same object when nothing changes)."""
    url = pinned_run_url(identity, callback, web_url)
    return callback if url == callback.body.workflow.url else callback.with_run_url(url)
