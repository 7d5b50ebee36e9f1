"""Installation tokens: cached in-process and in the shared store, refreshed early, coalesced."""

from __future__ import annotations

import asyncio

import pytest

from crcr.github.errors import GitHubNotFound
from crcr.sandbox.github_state import SandboxGitHub

from .conftest import ClientFactory, Clock, CountingStore

LOOKUP = "/app/installations"
MINT = "/app/installations/*/access_tokens"


def lookups(github: SandboxGitHub) -> int:
    return len(github.calls("GET", LOOKUP))


def mints(github: SandboxGitHub) -> int:
    return len(github.calls("POST", MINT))


async def test_a_warm_token_costs_no_github_call_and_no_store_round_trip(
    make_client: ClientFactory, github: SandboxGitHub, store: CountingStore
) -> None:
    client = make_client()
    await client.dispatch("org/backend", "push", {"n": 0})
    trips_when_warm = store.round_trips

    for n in range(1, 6):
        await client.dispatch("org/backend", "push", {"n": n})

    assert (lookups(github), mints(github)) == (1, 1)
    assert store.round_trips == trips_when_warm
    assert len(github.dispatches("org/backend")) == 6


async def test_repos_of_one_installation_share_its_token(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client()

    first = await client.installation_token("org/backend")
    second = await client.installation_token("org/other")
    elsewhere = await client.installation_token("elsewhere/repo")

    assert first == second != elsewhere
    assert (lookups(github), mints(github)) == (1, 2)


async def test_a_token_is_replaced_five_minutes_before_it_expires(
    make_client: ClientFactory, github: SandboxGitHub, clock: Clock
) -> None:
    client = make_client()
    first = await client.installation_token("org/backend")

    clock.now += 3600 - 300 - 1
    still_first = await client.installation_token("org/backend")
    clock.now += 2
    second = await client.installation_token("org/backend")

    assert still_first == first
    assert second != first
    assert mints(github) == 2
    await client.dispatch("org/backend", "push", {})  # the new token works
    assert len(github.dispatches()) == 1


async def test_two_clients_sharing_a_store_share_the_token(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    one, two = make_client(), make_client()

    token_one = await one.installation_token("org/backend")
    token_two = await two.installation_token("org/backend")

    assert token_one == token_two
    assert (lookups(github), mints(github)) == (1, 1)


async def test_clients_without_a_shared_store_each_mint_their_own(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    one, two = make_client(store=None), make_client(store=None)

    assert await one.installation_token("org/backend") != await two.installation_token(
        "org/backend"
    )
    assert mints(github) == 2


async def test_concurrent_cold_requests_share_one_lookup_and_one_mint(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client()

    await asyncio.gather(*(client.dispatch("org/backend", "push", {"n": n}) for n in range(30)))

    assert (lookups(github), mints(github)) == (1, 1)
    assert len(github.dispatches()) == 30


async def test_concurrent_repos_of_one_installation_mint_one_token(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client()
    repos = ["org/backend", "org/other", "org/third"] * 5

    await asyncio.gather(*(client.dispatch(repo, "push", {}) for repo in repos))

    assert lookups(github) == 1
    assert mints(github) == 1


async def test_a_token_github_stopped_honouring_is_replaced_once(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client()
    await client.dispatch("org/backend", "push", {})
    github.expire_tokens()

    await client.dispatch("org/backend", "push", {})

    statuses = [c.status for c in github.calls("POST", "/repos/*/dispatches")]
    assert statuses == [204, 401, 204]
    assert mints(github) == 2


async def test_a_repo_left_out_of_its_owners_installation_is_not_found(
    make_client: ClientFactory,
) -> None:
    client = make_client()

    with pytest.raises(GitHubNotFound) as caught:
        await client.dispatch("org/not-installed", "push", {})

    assert caught.value.call == "POST /repos/org/not-installed/dispatches"


async def test_a_repo_of_an_owner_without_the_app_is_not_found_naming_the_lookup(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client()

    with pytest.raises(GitHubNotFound) as caught:
        await client.dispatch("stranger/repo", "push", {})

    assert caught.value.call == "GET /repos/stranger/repo/installation"
    assert lookups(github) == 1


async def test_one_failing_waiter_does_not_fail_the_others(
    make_client: ClientFactory, github: SandboxGitHub
) -> None:
    client = make_client()
    github.inject_fault(LOOKUP, latency=0.05)

    cancelled = asyncio.create_task(client.installation_token("org/backend"))
    patient = asyncio.create_task(client.installation_token("org/backend"))
    await asyncio.sleep(0.01)
    cancelled.cancel()

    assert (await patient).startswith("ghs_")
    assert lookups(github) == 1
