"""Tie what a callback body claims about its run to what its verified token says, pure.

The token is signed by the CI system; the body is whatever the downstream wrote. Where
both name the same thing (the run, its attempt, the run's page), the token wins.
"""

from __future__ import annotations

from crcr.oidc.claims import VerifiedIdentity
from crcr.relay.callback.schema import ParsedCallback
from crcr.web_urls import actions_run_url, is_run_url_of


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
