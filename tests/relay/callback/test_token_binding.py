"""What a callback says about its run is held to what its token says (links, run, attempt).

Each refusal is a 400 naming the field, with nothing written; a run link elsewhere
than the verified repository's run is replaced by that run's page.
"""

from __future__ import annotations

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import L2_REPO, Relay, callback_body

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
    assert response.json()["error"].startswith(f"workflow.{field}:")
    assert relay.hud.writes == 0


async def test_a_run_link_to_another_repository_becomes_the_verified_runs_page(
    relay: Relay,
) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1", run_id="9001")
    body["workflow"]["url"] = "https://github.com/victim/repo/actions/runs/1"

    response = await relay.post(body)

    assert response.json() == {"status": "accepted"}
    assert relay.hud.only_row()["url"] == f"https://github.com/{L2_REPO}/actions/runs/9001"


async def test_a_run_link_to_one_of_the_runs_own_attempts_is_kept(relay: Relay) -> None:
    await relay.dispatch("d-1")
    body = callback_body("d-1", run_id="9001")
    own = f"https://github.com/{L2_REPO}/actions/runs/9001/attempts/1"
    body["workflow"]["url"] = own

    await relay.post(body)

    assert relay.hud.only_row()["url"] == own
