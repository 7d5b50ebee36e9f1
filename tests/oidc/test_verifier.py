"""Callback tokens: only RS256 tokens of a trusted issuer, for this relay, in time, pass.

The issuers are the sandbox's, served in process; the JWKS cache lives in a real state
store, each test running on Redis and on SQLite. Time is a controllable clock shared by
issuer and verifier.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from crcr.config.settings import OidcIssuer, Settings
from crcr.oidc import KeysUnavailable, OidcVerifier, TokenRejected, VerifiedIdentity
from crcr.sandbox.oidc_issuer import SandboxIssuer, SigningKey
from crcr.stores.factory import open_state_store
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

GITHUB_URL = "http://sandbox.test/oidc"
BUILDKITE_URL = "http://sandbox.test/buildkite"
AUDIENCE = "pytorch-cross-repo-ci-relay"
# Buildkite's organization_id / pipeline_id claims are UUIDs; slugs are free text.
ORG_ID = "0190a1b2-7c1e-7d3a-9f00-3a1d2e4f5a60"
PIPELINE_ID = "0190a1b2-7c1e-7d3a-9f00-5b6c7d8e9f01"
CPU_PIPELINE_ID = "0190a1b2-7c1e-7d3a-9f00-00000000c0e0"
RELEASE_PIPELINE_ID = "0190a1b2-7c1e-7d3a-9f00-0000000a11e5"
STRANGER_ORG_ID = "7f000000-0000-4000-8000-000000000001"
STRANGER_PIPELINE_ID = "7f000000-0000-4000-8000-000000000002"


class Clock:
    """Wall-clock time that a test can move forward."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def keys() -> list[SigningKey]:
    """Key pairs generated once: RSA generation would dominate the suite's run time."""
    return [SigningKey.generate() for _ in range(3)]


@pytest.fixture
def github(clock: Clock, keys: list[SigningKey]) -> SandboxIssuer:
    return SandboxIssuer(GITHUB_URL, key=keys[0], clock=clock)


@pytest.fixture
def buildkite(clock: Clock, keys: list[SigningKey]) -> SandboxIssuer:
    return SandboxIssuer(BUILDKITE_URL, key=keys[1], clock=clock)


@pytest.fixture
def trusted() -> list[OidcIssuer]:
    return [
        OidcIssuer(issuer=GITHUB_URL, kind="github"),
        OidcIssuer.model_validate(
            {
                "issuer": BUILDKITE_URL,
                "kind": "buildkite",
                "repo_map": {
                    f"{ORG_ID}/{PIPELINE_ID}": {
                        "repo": "acme/gpu-ci",
                        "required_claims": {"build_branch": "main"},
                    },
                    f"{ORG_ID}/{CPU_PIPELINE_ID}": "acme/cpu-ci",
                    # The reference's ci_providers.yml form: any of a list.
                    f"{ORG_ID}/{RELEASE_PIPELINE_ID}": {
                        "repo": "acme/release-ci",
                        "required_claims": {"build_branch": ["main", "release/2.6"]},
                    },
                },
            }
        ),
    ]


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    """Redis under a namespace of the test's own, or SQLite opened as `crcr serve` does."""
    opened: StateStore
    if request.param == "sqlite":
        opened = await open_state_store(Settings(redis_url=None, data_dir=tmp_path))
        assert isinstance(opened, SqliteStateStore)
    else:
        url: str = request.getfixturevalue("redis_url")
        prefix: str = request.getfixturevalue("redis_namespace")
        opened = RedisStateStore.from_url(url, prefix=prefix)
    yield opened
    await opened.close()


@pytest.fixture
async def http(github: SandboxIssuer, buildkite: SandboxIssuer) -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(
        routes=[
            Mount("/oidc", routes=github.routes()),
            Mount("/buildkite", routes=buildkite.routes()),
        ]
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        yield client


@pytest.fixture
def verifier(
    trusted: list[OidcIssuer], store: StateStore, http: httpx.AsyncClient, clock: Clock
) -> OidcVerifier:
    return OidcVerifier(trusted, AUDIENCE, store, http, clock=clock)


def bearer(token: str) -> str:
    return f"Bearer {token}"


async def rejection(verifier: OidcVerifier, authorization: str | None) -> str:
    """Verify, expect a rejection, and return its reason (checked not to echo the token)."""
    with pytest.raises(TokenRejected) as caught:
        await verifier.verify(authorization)
    reason = caught.value.reason
    token = (authorization or "").removeprefix("Bearer ")
    assert len(token) < 8 or token not in reason
    return reason


# --- happy paths ----------------------------------------------------------------


async def test_github_token_yields_its_repository_and_run(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    token = github.mint_actions_token("acme/backend", audience=AUDIENCE, run_id="4242")
    identity = await verifier.verify(bearer(token))
    assert identity == VerifiedIdentity(
        repo="acme/backend", issuer_kind="github", run_id="4242", claims=identity.claims
    )
    assert identity.claims["run_attempt"] == "1"


async def test_buildkite_token_maps_org_and_pipeline_ids_to_the_repo(
    verifier: OidcVerifier, buildkite: SandboxIssuer
) -> None:
    token = buildkite.mint_buildkite_token(
        organization_slug="acme",
        pipeline_slug="gpu-tests",
        organization_id=ORG_ID,
        pipeline_id=PIPELINE_ID,
        audience=AUDIENCE,
    )
    identity = await verifier.verify(bearer(token))
    assert (identity.repo, identity.issuer_kind, identity.run_id) == (
        "acme/gpu-ci",
        "buildkite",
        None,
    )


async def test_buildkite_ids_match_whatever_their_case(
    verifier: OidcVerifier, buildkite: SandboxIssuer
) -> None:
    token = buildkite.mint_buildkite_token(
        organization_slug="acme",
        pipeline_slug="cpu-tests",
        organization_id=ORG_ID.upper(),
        pipeline_id=CPU_PIPELINE_ID.upper(),
        audience=AUDIENCE,
    )
    assert (await verifier.verify(bearer(token))).repo == "acme/cpu-ci"


# --- malformed requests ---------------------------------------------------------


@pytest.mark.parametrize("header", [None, "", "   "])
async def test_missing_header_is_rejected(verifier: OidcVerifier, header: str | None) -> None:
    assert await rejection(verifier, header) == "missing Authorization header"


async def test_non_bearer_header_is_rejected(verifier: OidcVerifier) -> None:
    reason = await rejection(verifier, "Basic dXNlcjpwYXNz")
    assert reason == "Authorization header is not a Bearer token"


@pytest.mark.parametrize(
    "garbage", ["not-a-jwt", "abc.def.ghi", "a.b", "e30.e30", "e30.e30.e30.e30", "W10.e30.sig"]
)
async def test_something_that_is_not_a_jwt_is_rejected(
    verifier: OidcVerifier, garbage: str
) -> None:
    assert "not a well-formed JWT" in await rejection(verifier, bearer(garbage))


# --- what the token says ----------------------------------------------------------


async def test_token_for_another_audience_is_rejected(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    token = github.mint_actions_token("acme/backend", audience="https://github.com/acme")
    assert "audience (aud)" in await rejection(verifier, bearer(token))


async def test_token_from_an_untrusted_issuer_is_rejected_without_fetching(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    token = github.mint_actions_token(
        "acme/backend", audience=AUDIENCE, iss="https://evil.example/oidc"
    )
    assert await rejection(verifier, bearer(token)) == "token issuer (iss) is not trusted"
    assert github.jwks_requests == 0


async def test_token_claiming_one_trusted_issuer_but_signed_by_another_is_rejected(
    verifier: OidcVerifier, github: SandboxIssuer, buildkite: SandboxIssuer
) -> None:
    claims = github.actions_claims("acme/backend", audience=AUDIENCE)
    forged = buildkite.mint(claims)  # Buildkite's key, GitHub's iss
    assert "(kid)" in await rejection(verifier, bearer(forged))


async def test_token_missing_the_repository_claim_is_rejected(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    claims = github.actions_claims("acme/backend", audience=AUDIENCE)
    del claims["repository"]
    assert await rejection(verifier, bearer(github.mint(claims))) == (
        "token lacks the repository claim"
    )


async def test_token_without_exp_is_rejected(verifier: OidcVerifier, github: SandboxIssuer) -> None:
    claims = github.actions_claims("acme/backend", audience=AUDIENCE)
    del claims["exp"]
    assert "exp" in await rejection(verifier, bearer(github.mint(claims)))


# --- time, with the 60-second leeway ----------------------------------------------


@pytest.mark.parametrize(("age", "accepted"), [(-59, True), (-60, False), (-3600, False)])
async def test_expiry_allows_less_than_a_minute_of_clock_skew(
    verifier: OidcVerifier, github: SandboxIssuer, clock: Clock, age: int, accepted: bool
) -> None:
    token = github.mint_actions_token(
        "acme/backend", audience=AUDIENCE, exp=int(clock.now) + age, iat=int(clock.now) - 3700
    )
    clock.now = float(int(clock.now))
    if accepted:
        assert (await verifier.verify(bearer(token))).repo == "acme/backend"
    else:
        assert await rejection(verifier, bearer(token)) == "token has expired (exp)"


@pytest.mark.parametrize(("ahead", "accepted"), [(60, True), (61, False), (3600, False)])
async def test_not_before_allows_a_minute_of_clock_skew(
    verifier: OidcVerifier, github: SandboxIssuer, clock: Clock, ahead: int, accepted: bool
) -> None:
    clock.now = float(int(clock.now))
    start = int(clock.now) + ahead
    token = github.mint_actions_token(
        "acme/backend", audience=AUDIENCE, nbf=start, iat=int(clock.now), exp=start + 300
    )
    if accepted:
        assert (await verifier.verify(bearer(token))).repo == "acme/backend"
    else:
        assert await rejection(verifier, bearer(token)) == "token is not valid yet (nbf)"


async def test_token_issued_in_the_future_is_rejected(
    verifier: OidcVerifier, github: SandboxIssuer, clock: Clock
) -> None:
    later = int(clock.now) + 600
    # nbf in time, so that iat is what fails (a null nbf is itself refused, as PyJWT does).
    token = github.mint_actions_token(
        "acme/backend", audience=AUDIENCE, iat=later, nbf=int(clock.now)
    )
    assert await rejection(verifier, bearer(token)) == "token was issued in the future (iat)"


def test_leeway_beyond_a_minute_is_refused(
    trusted: list[OidcIssuer], store: StateStore, http: httpx.AsyncClient
) -> None:
    with pytest.raises(ValueError, match="leeway"):
        OidcVerifier(trusted, AUDIENCE, store, http, leeway=61)


# --- forged signatures -----------------------------------------------------------


async def test_alg_none_is_rejected_before_any_key_is_fetched(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    token = github.mint(github.actions_claims("acme/backend", audience=AUDIENCE), alg="none")
    assert await rejection(verifier, bearer(token)) == (
        "token algorithm none is not allowed (RS256 only)"
    )
    assert github.jwks_requests == 0


async def test_hs256_keyed_with_the_public_key_is_rejected(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    token = github.mint(github.actions_claims("acme/backend", audience=AUDIENCE), alg="HS256")
    assert await rejection(verifier, bearer(token)) == (
        "token algorithm HS256 is not allowed (RS256 only)"
    )
    assert github.jwks_requests == 0


async def test_signature_of_another_key_under_a_published_kid_is_rejected(
    verifier: OidcVerifier, github: SandboxIssuer, keys: list[SigningKey]
) -> None:
    impostor = SigningKey(kid=github.signing_key.kid, private_key=keys[2].private_key)
    token = github.mint(github.actions_claims("acme/backend", audience=AUDIENCE), key=impostor)
    assert await rejection(verifier, bearer(token)) == (
        "token signature does not match the issuer's key"
    )


async def test_tampered_claims_break_the_signature(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    genuine = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    other = github.mint_actions_token("acme/victim", audience=AUDIENCE)
    header, _, signature = genuine.split(".")
    spliced = ".".join([header, other.split(".")[1], signature])
    assert "signature" in await rejection(verifier, bearer(spliced))


async def test_token_declaring_jws_extensions_is_rejected(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    claims = github.actions_claims("acme/backend", audience=AUDIENCE)
    token = github.mint(claims, headers={"crit": ["exp"]})
    assert "extensions" in await rejection(verifier, bearer(token))


async def test_audience_list_must_include_this_relay(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    both = github.mint_actions_token("acme/backend", audience=AUDIENCE, aud=["x", AUDIENCE])
    assert (await verifier.verify(bearer(both))).repo == "acme/backend"
    others = github.mint_actions_token("acme/backend", aud=["x", "y"])
    assert "audience (aud)" in await rejection(verifier, bearer(others))
    malformed = github.mint_actions_token("acme/backend", aud=[AUDIENCE, 7])
    assert "audience (aud)" in await rejection(verifier, bearer(malformed))


# --- Buildkite mapping -----------------------------------------------------------


async def test_buildkite_pipeline_not_in_the_map_is_rejected(
    verifier: OidcVerifier, buildkite: SandboxIssuer
) -> None:
    token = buildkite.mint_buildkite_token(
        organization_slug="acme",
        pipeline_slug="unlisted",
        organization_id=ORG_ID,
        pipeline_id=STRANGER_PIPELINE_ID,
        audience=AUDIENCE,
    )
    assert await rejection(verifier, bearer(token)) == (
        "Buildkite pipeline is not mapped to a repository"
    )


@pytest.mark.parametrize(
    "ids",
    [{}, {"organization_id": ORG_ID}, {"pipeline_id": PIPELINE_ID}],
    ids=["neither", "no pipeline_id", "no organization_id"],
)
async def test_buildkite_token_without_both_id_claims_is_rejected(
    verifier: OidcVerifier, buildkite: SandboxIssuer, ids: dict[str, str]
) -> None:
    token = buildkite.mint_buildkite_token(
        organization_slug="acme", pipeline_slug="gpu-tests", audience=AUDIENCE, **ids
    )
    reason = await rejection(verifier, bearer(token))
    assert reason.startswith("token lacks the Buildkite organization_id and pipeline_id claims")
    assert "--claim organization_id,pipeline_id" in reason


@pytest.mark.parametrize("own_ids", [False, True])
async def test_slugs_spelling_a_mapped_pipelines_ids_do_not_reach_its_repo(
    verifier: OidcVerifier, buildkite: SandboxIssuer, own_ids: bool
) -> None:
    # Every Buildkite organisation shares the issuer, and slugs are whatever their owner
    # typed: a stranger can name its organisation and pipeline after a victim's UUIDs.
    ids = {"organization_id": STRANGER_ORG_ID, "pipeline_id": STRANGER_PIPELINE_ID}
    token = buildkite.mint_buildkite_token(
        organization_slug=ORG_ID,
        pipeline_slug=PIPELINE_ID,
        audience=AUDIENCE,
        **(ids if own_ids else {}),
    )
    reason = await rejection(verifier, bearer(token))
    if own_ids:
        assert reason == "Buildkite pipeline is not mapped to a repository"
    else:
        assert reason.startswith("token lacks the Buildkite organization_id")


@pytest.mark.parametrize("branch", ["feature/x", None])
async def test_buildkite_required_claim_not_met_is_rejected(
    verifier: OidcVerifier, buildkite: SandboxIssuer, branch: str | None
) -> None:
    token = buildkite.mint_buildkite_token(
        organization_slug="acme",
        pipeline_slug="gpu-tests",
        organization_id=ORG_ID,
        pipeline_id=PIPELINE_ID,
        audience=AUDIENCE,
        build_branch=branch,
    )
    assert await rejection(verifier, bearer(token)) == (
        "token claim build_branch does not meet the pipeline's requirement"
    )


@pytest.mark.parametrize(
    ("branch", "accepted"),
    [("main", True), ("release/2.6", True), ("release/2.5", False), (None, False)],
)
async def test_a_required_claim_given_as_a_list_is_met_by_any_of_its_values(
    verifier: OidcVerifier, buildkite: SandboxIssuer, branch: str | None, accepted: bool
) -> None:
    token = buildkite.mint_buildkite_token(
        organization_slug="acme",
        pipeline_slug="release",
        organization_id=ORG_ID,
        pipeline_id=RELEASE_PIPELINE_ID,
        audience=AUDIENCE,
        build_branch=branch,
    )
    if accepted:
        assert (await verifier.verify(bearer(token))).repo == "acme/release-ci"
    else:
        assert await rejection(verifier, bearer(token)) == (
            "token claim build_branch does not meet the pipeline's requirement"
        )


# --- the JWKS cache --------------------------------------------------------------


async def test_unknown_kid_triggers_exactly_one_refetch_per_minute(
    verifier: OidcVerifier, github: SandboxIssuer, clock: Clock
) -> None:
    await verifier.verify(bearer(github.mint_actions_token("acme/backend", audience=AUDIENCE)))
    assert github.jwks_requests == 1
    clock.now = (clock.now // 60 + 1) * 60 - 5  # the probes straddle a turn of the minute

    claims = github.actions_claims("acme/backend", audience=AUDIENCE)
    for kid in ("made-up-1", "made-up-2", "made-up-3"):
        token = github.mint(claims, headers={"kid": kid})
        assert "(kid)" in await rejection(verifier, bearer(token))
        clock.advance(10)
    assert github.jwks_requests == 2


async def test_jwks_is_shared_through_the_store_across_instances(
    verifier: OidcVerifier,
    github: SandboxIssuer,
    trusted: list[OidcIssuer],
    store: StateStore,
    http: httpx.AsyncClient,
    clock: Clock,
) -> None:
    token = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    await verifier.verify(bearer(token))
    second_instance = OidcVerifier(trusted, AUDIENCE, store, http, clock=clock)
    assert (await second_instance.verify(bearer(token))).repo == "acme/backend"
    assert github.jwks_requests == 1

    unknown = github.mint(github.actions_claims("acme/x", audience=AUDIENCE), headers={"kid": "?"})
    await rejection(verifier, bearer(unknown))
    await rejection(second_instance, bearer(unknown))
    assert github.jwks_requests == 2  # the refetch budget is per issuer, not per instance


async def test_rotated_key_is_picked_up_immediately_when_no_refetch_was_spent(
    verifier: OidcVerifier, github: SandboxIssuer, keys: list[SigningKey]
) -> None:
    await verifier.verify(bearer(github.mint_actions_token("acme/backend", audience=AUDIENCE)))
    github.rotate_key(keys[2])
    rotated = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    assert (await verifier.verify(bearer(rotated))).repo == "acme/backend"
    assert github.jwks_requests == 2


async def test_rotated_key_is_picked_up_once_the_minute_has_passed(
    verifier: OidcVerifier, github: SandboxIssuer, clock: Clock, keys: list[SigningKey]
) -> None:
    await verifier.verify(bearer(github.mint_actions_token("acme/backend", audience=AUDIENCE)))
    probe = github.mint(github.actions_claims("acme/x", audience=AUDIENCE), headers={"kid": "?"})
    await rejection(verifier, bearer(probe))  # spends this minute's refetch

    clock.advance(10)
    github.rotate_key(keys[2])
    too_soon = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    assert "(kid)" in await rejection(verifier, bearer(too_soon))
    assert github.jwks_requests == 2

    clock.advance(51)
    fresh = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    assert (await verifier.verify(bearer(fresh))).repo == "acme/backend"
    assert github.jwks_requests == 3


async def test_cached_keys_expire_after_an_hour(
    verifier: OidcVerifier, github: SandboxIssuer, clock: Clock
) -> None:
    await verifier.verify(bearer(github.mint_actions_token("acme/backend", audience=AUDIENCE)))
    clock.advance(3599)
    await verifier.verify(bearer(github.mint_actions_token("acme/backend", audience=AUDIENCE)))
    assert github.jwks_requests == 1
    clock.advance(2)
    await verifier.verify(bearer(github.mint_actions_token("acme/backend", audience=AUDIENCE)))
    assert github.jwks_requests == 2


async def test_unreachable_jwks_rejects_with_keys_unavailable(
    verifier: OidcVerifier, github: SandboxIssuer
) -> None:
    github.jwks_unavailable = True
    token = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    with pytest.raises(KeysUnavailable, match="could not be fetched"):
        await verifier.verify(bearer(token))


async def test_a_down_issuer_is_asked_once_a_minute_while_nothing_is_cached(
    verifier: OidcVerifier,
    github: SandboxIssuer,
    trusted: list[OidcIssuer],
    store: StateStore,
    http: httpx.AsyncClient,
    clock: Clock,
) -> None:
    github.jwks_unavailable = True
    token = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    second_instance = OidcVerifier(trusted, AUDIENCE, store, http, clock=clock)

    for instance in (verifier, verifier, second_instance, second_instance):
        with pytest.raises(KeysUnavailable, match="could not be fetched"):
            await instance.verify(bearer(token))
        clock.advance(10)
    assert github.jwks_requests == 1  # the failure is remembered, across instances

    clock.advance(21)  # a minute after the failed fetch
    github.jwks_unavailable = False
    assert (await second_instance.verify(bearer(token))).repo == "acme/backend"
    assert (await verifier.verify(bearer(token))).repo == "acme/backend"
    assert github.jwks_requests == 2


class SlowTransport(httpx.AsyncBaseTransport):
    """Delays every request, so that a fetch is still under way when others arrive."""

    def __init__(self, inner: httpx.AsyncBaseTransport, seconds: float) -> None:
        self._inner, self._seconds = inner, seconds

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(self._seconds)
        return await self._inner.handle_async_request(request)


async def test_instances_starting_together_fetch_the_keys_once(
    github: SandboxIssuer,
    buildkite: SandboxIssuer,
    trusted: list[OidcIssuer],
    store: StateStore,
    clock: Clock,
) -> None:
    app = Starlette(routes=[Mount("/oidc", routes=github.routes())])
    slow = SlowTransport(httpx.ASGITransport(app=app), 0.3)
    token = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    async with httpx.AsyncClient(transport=slow) as http:
        instances = [OidcVerifier(trusted, AUDIENCE, store, http, clock=clock) for _ in range(2)]
        callbacks = [instance.verify(bearer(token)) for instance in instances for _ in range(3)]
        identities = await asyncio.gather(*callbacks)

    assert {identity.repo for identity in identities} == {"acme/backend"}
    assert github.jwks_requests == 1


class CountingReads:
    """The real store, counting `cache_get` calls (how often waiters look for the keys)."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self.reads = 0

    async def cache_get(self, namespace: str, key: str) -> str | None:
        self.reads += 1
        return await self._store.cache_get(namespace, key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def test_requests_waiting_for_this_instances_fetch_await_it_rather_than_poll(
    github: SandboxIssuer, trusted: list[OidcIssuer], store: StateStore, clock: Clock
) -> None:
    app = Starlette(routes=[Mount("/oidc", routes=github.routes())])
    slow = SlowTransport(httpx.ASGITransport(app=app), 0.5)
    token = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    counting = CountingReads(store)
    async with httpx.AsyncClient(transport=slow) as http:
        verifier = OidcVerifier(trusted, AUDIENCE, counting, http, clock=clock)  # type: ignore[arg-type]
        identities = await asyncio.gather(*(verifier.verify(bearer(token)) for _ in range(20)))

    assert {identity.repo for identity in identities} == {"acme/backend"}
    assert github.jwks_requests == 1
    # Each looks in the store a few times until the fetch has started (~5 reads), then
    # waits on it; polling every 50 ms through the fetch's 0.5 s made it ~20 each.
    assert counting.reads <= 6 * 20


@pytest.fixture
async def silent_jwks_url() -> AsyncIterator[str]:
    """A JWKS URL on a real socket whose server accepts the connection and never answers."""

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client hangs up
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/.well-known/jwks"


async def test_the_jwks_fetch_gives_up_after_crcr_github_timeout(
    github: SandboxIssuer, store: StateStore, silent_jwks_url: str
) -> None:
    settings = Settings(
        oidc_issuers=[{"issuer": GITHUB_URL, "kind": "github", "jwks_url": silent_jwks_url}],
        oidc_audience=AUDIENCE,
        github_timeout=0.3,
    )
    token = github.mint_actions_token("acme/backend", audience=AUDIENCE)
    async with httpx.AsyncClient(trust_env=False) as http:
        verifier = OidcVerifier.from_settings(settings, store, http)
        started = time.monotonic()
        with pytest.raises(KeysUnavailable, match="could not be fetched"):
            await verifier.verify(bearer(token))

    assert 0.3 <= time.monotonic() - started < 5  # not the 10 s default
