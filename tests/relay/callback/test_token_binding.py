"""What a callback says about its run is held to what its token says (links, run, attempt),
and the token must be the allowlisted repository's own (its id, workflow and ref).

A body at odds with its token is a 400 naming the field, a token the allowlist entry
excludes a 403, each with nothing written; a run link elsewhere than the verified
repository's run is replaced by that run's page.
"""

from __future__ import annotations

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import L2_REPO, Relay, callback_body

from crcr.oidc.claims import VerifiedIdentity
from crcr.relay.allowlist.model import Allowlist, TokenConstraints, parse_allowlist
from crcr.relay.callback.token_binding import NotThisRepository, check_constraints

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


@pytest.mark.parametrize("field", ["url", "artifact_url"])
@pytest.mark.parametrize(
    "link", ["javascript:alert(document.cookie)", "data:text/html,<b>x</b>", "http://ci.example"]
)
async def test_a_link_that_is_not_https_is_refused(relay: Relay, field: str, link: str) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1")
    body["workflow"][field] = link

    response = await relay.post(body)

    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"workflow.{field}:")
    assert relay.hud.writes == 0


async def test_a_run_link_to_another_repository_becomes_the_verified_runs_page(
    relay: Relay,
) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1", run_id="9001")
    body["workflow"]["url"] = "https://github.com/victim/repo/actions/runs/1"

    response = await relay.post(body)

    assert response.json() == {"status": "accepted"}
    run_page = f"https://github.com/{L2_REPO}/actions/runs/9001"
    assert relay.hud.only_row()["workflow_run_url"] == run_page


async def test_a_run_link_to_one_of_the_runs_own_attempts_is_kept(relay: Relay) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1", run_id="9001")
    own = f"https://github.com/{L2_REPO}/actions/runs/9001/attempts/1"
    body["workflow"]["url"] = own

    await relay.post(body)

    assert relay.hud.only_row()["workflow_run_url"] == own


# --- the run and the repository are the token's ------------------------------------


async def test_a_body_naming_another_run_than_its_token_is_refused(relay: Relay) -> None:
    await relay.dispatch("d-1")

    response = await relay.post(callback_body("d-1", run_id="9001"), token=relay.token(run_id="1"))

    assert response.status_code == 400
    assert response.json()["detail"] == "workflow.run_id: does not match the token's run_id"
    assert relay.hud.writes == 0


async def test_a_body_naming_another_attempt_than_its_token_is_refused(relay: Relay) -> None:
    await relay.dispatch("d-1")

    response = await relay.post(
        callback_body("d-1", run_attempt="2"), token=relay.token(run_attempt="1")
    )

    assert response.status_code == 400
    assert response.json()["detail"].startswith("workflow.run_attempt:")


async def test_a_recreated_repository_does_not_inherit_the_level(relay: Relay) -> None:
    await relay.dispatch("d-1")
    await relay.dispatch("d-2")
    first = await relay.post(callback_body("d-1"))  # learns the repository's id

    impostor = relay.token(repository_id="424242")  # same name, another repository
    second = await relay.post(callback_body("d-2"), token=impostor)

    assert first.json() == {"status": "accepted"}
    assert second.status_code == 403
    assert "repository_id" in second.json()["detail"]
    assert relay.hud.writes == 1


def use_allowlist(relay: Relay, text: str) -> None:
    allowlist = parse_allowlist(text)

    async def current() -> Allowlist:
        return allowlist

    relay.deps.allowlist = current


async def test_an_allowlisted_id_wins_over_the_name(relay: Relay) -> None:
    use_allowlist(relay, f"L2:\n  - {L2_REPO}: {{repository_id: 424242}}\n")
    await relay.dispatch("d-1")

    refused = await relay.post(callback_body("d-1"))
    accepted = await relay.post(callback_body("d-1"), token=relay.token(repository_id="424242"))

    assert refused.status_code == 403
    assert accepted.json() == {"status": "accepted"}


async def test_only_the_allowlisted_workflow_on_the_allowlisted_ref_may_report(
    relay: Relay,
) -> None:
    workflow = f"{L2_REPO}/.github/workflows/crcr.yml@*"
    use_allowlist(relay, f"L2:\n  - {L2_REPO}: {{workflow: '{workflow}', ref: refs/heads/main}}\n")
    await relay.dispatch("d-1")
    branch = "refs/heads/evil"

    from_branch = await relay.post(
        callback_body("d-1"),
        token=relay.token(
            ref=branch, job_workflow_ref=f"{L2_REPO}/.github/workflows/crcr.yml@{branch}"
        ),
    )
    other_workflow = await relay.post(
        callback_body("d-1"),
        token=relay.token(
            job_workflow_ref=f"{L2_REPO}/.github/workflows/other.yml@refs/heads/main"
        ),
    )
    allowed = await relay.post(callback_body("d-1"))

    assert (from_branch.status_code, other_workflow.status_code) == (403, 403)
    assert "ref" in from_branch.json()["detail"]
    assert "workflow" in other_workflow.json()["detail"]
    assert allowed.json() == {"status": "accepted"}


# --- the pure rules, alone ----------------------------------------------------------

WORKFLOW_REF = f"{L2_REPO}/.github/workflows/crcr.yml@refs/heads/main"
ANY_WORKFLOW_ON_MAIN = f"{L2_REPO}/.github/workflows/*@refs/heads/main"


def identity(kind: str = "github", **claims: str) -> VerifiedIdentity:
    base = {"repository_id": "77", "ref": "refs/heads/main", "job_workflow_ref": WORKFLOW_REF}
    return VerifiedIdentity(L2_REPO, kind, "9001", {**base, **claims})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("constraints", "learned", "claims", "refused"),
    [
        (TokenConstraints(), None, {}, False),
        (TokenConstraints(), "77", {}, False),
        (TokenConstraints(), "78", {}, True),
        (TokenConstraints(repository_id="77"), "78", {}, False),  # pinned beats learned
        (TokenConstraints(repository_id="78"), None, {}, True),
        (
            TokenConstraints(workflow=f"{L2_REPO}/.github/workflows/*@refs/heads/main"),
            None,
            {},
            False,
        ),
        (
            TokenConstraints(workflow=WORKFLOW_REF),
            None,
            {"job_workflow_ref": "x@refs/heads/b"},
            True,
        ),
        (TokenConstraints(ref="refs/heads/main"), None, {"ref": "refs/heads/evil"}, True),
        (
            TokenConstraints(ref="refs/heads/release/*"),
            None,
            {"ref": "refs/heads/release/2.9"},
            False,
        ),
    ],
)
def test_constraints_table(
    constraints: TokenConstraints, learned: str | None, claims: dict[str, str], refused: bool
) -> None:
    if refused:
        with pytest.raises(NotThisRepository):
            check_constraints(identity(**claims), constraints, learned)
    else:
        check_constraints(identity(**claims), constraints, learned)


def test_other_issuers_are_not_held_to_github_claims() -> None:
    check_constraints(identity("buildkite"), TokenConstraints(repository_id="1", ref="x"), "2")
