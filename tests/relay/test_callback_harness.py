"""The harness's HUD is the real one: rows keyed as the HUD keys them, refusals as it words them."""

from __future__ import annotations

from tests.relay import callback_harness as harness
from tests.relay.callback_harness import Relay, callback_body

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


async def test_two_runs_of_one_job_for_one_dispatch_are_two_rows(relay: Relay) -> None:
    await relay.dispatch("d-1")

    for run_id in ("9001", "9002"):
        for status, conclusion in (("in_progress", None), ("completed", "success")):
            response = await relay.post(callback_body("d-1", status, conclusion, run_id=run_id))
            assert response.json() == {"status": "accepted"}

    assert sorted(row["run_id"] for row in relay.hud.rows.values()) == ["9001", "9002"]


async def test_a_hud_that_is_down_answers_503_with_a_detail(relay: Relay) -> None:
    relay.hud.down = True

    async with harness.outside_world(relay.issuer, relay.hud) as http:
        answer = await http.post(harness.HUD_URL, json={})

    assert (answer.status_code, answer.json()) == (503, {"detail": "down for maintenance"})
    assert relay.hud.refused == 1


async def test_a_body_without_the_hud_token_is_refused_with_a_detail(relay: Relay) -> None:
    async with harness.outside_world(relay.issuer, relay.hud) as http:
        answer = await http.post(harness.HUD_URL, json={})

    assert answer.status_code == 401
    assert "x-hud-internal-bot" in answer.json()["detail"]
    assert relay.hud.writes == 0
