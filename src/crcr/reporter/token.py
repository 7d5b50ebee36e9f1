"""Mint the OIDC token that proves to the relay which repository is calling (SPEC §8).

The token is a bearer credential: it is returned to the caller and never printed,
logged or put in an exception message. Errors describe the failure without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Awaitable, Mapping
from typing import Callable
from urllib.parse import quote, urlsplit

from crcr.reporter.ci_env import Provider
from crcr.reporter.retry import RetryPolicy, Sleep, real_sleep
from crcr.reporter.transport import NetworkError, Send

DEFAULT_AUDIENCE = "pytorch-cross-repo-ci-relay"
# The reference's Buildkite wrapper asks for 5 minutes: ample for one callback.
BUILDKITE_TOKEN_LIFETIME = 300
# The agent retries its own API call (agent v3: 5 attempts, about 30 s of backoff in
# all), so one still silent after a minute is hung, not slow.
BUILDKITE_AGENT_TIMEOUT = 60.0
# GitHub's ID tokens also live 5 minutes (undocumented, but what `exp` says), so half of
# that is the most a token may have aged before a request, leaving the other half for
# the request itself (the relay allows 60 s of clock leeway on top, but we do not lean
# on it).
TOKEN_REFRESH_AFTER = BUILDKITE_TOKEN_LIFETIME / 2

MintToken = Callable[[], Awaitable[str]]


class TokenError(Exception):
    """No token could be minted; the message says why and never contains a secret.

    `transient` when the token service kept failing (worth a warning, not a red job);
    otherwise the job is set up wrongly (no `id-token: write`, an old agent…).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


def github_token_url(request_url: str, audience: str) -> str:
    """Add the audience to `ACTIONS_ID_TOKEN_REQUEST_URL`.

    The runner's URL already carries a query string (`?api-version=…`), so the
    audience is appended with `&`, as GitHub's own toolkit does.
    """
    separator = "&" if "?" in request_url else "?"
    return f"{request_url}{separator}audience={quote(audience, safe='')}"


def _looks_like_token(value: str) -> bool:
    return bool(value) and value.count(".") == 2 and not any(c.isspace() for c in value)


async def mint_github_token(
    env: Mapping[str, str],
    audience: str,
    *,
    send: Send,
    policy: RetryPolicy | None = None,
    sleep: Sleep = real_sleep,
) -> str:
    """Ask the Actions runtime for an ID token with our audience.

    The runtime only hands out these variables to jobs with `id-token: write`, so
    their absence is reported as that missing permission.
    """
    policy = policy or RetryPolicy()
    request_url = env.get("ACTIONS_ID_TOKEN_REQUEST_URL", "").strip()
    request_token = env.get("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "").strip()
    if not request_url or not request_token:
        raise TokenError(
            "ACTIONS_ID_TOKEN_REQUEST_URL/ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set: "
            "the job needs `permissions: id-token: write`"
        )
    url = github_token_url(request_url, audience)
    host = urlsplit(request_url).netloc or "the Actions token service"
    headers = {"Authorization": f"Bearer {request_token}", "Accept": "application/json"}
    problem = "no attempt made"
    for attempt in range(1, policy.attempts + 1):
        try:
            response = await send("GET", url, headers, None)
        except NetworkError as exc:
            problem = f"{exc.kind} talking to {host}"
        else:
            if response.status_code == 200:
                try:
                    value = response.json().get("value")
                except (ValueError, AttributeError):
                    value = None
                if isinstance(value, str) and _looks_like_token(value):
                    return value
                raise TokenError(f"{host} answered 200 without a token in 'value'")
            problem = f"{host} answered HTTP {response.status_code}"
            if response.status_code < 500 and response.status_code != 429:
                raise TokenError(f"cannot mint the OIDC token: {problem}")
        if attempt < policy.attempts:
            await sleep(policy.delay(attempt))
    raise TokenError(
        f"cannot mint the OIDC token after {policy.attempts} attempts: {problem}", transient=True
    )


async def mint_buildkite_token(
    env: Mapping[str, str],
    audience: str,
    *,
    policy: RetryPolicy | None = None,
    sleep: Sleep = real_sleep,
    agent_timeout: float = BUILDKITE_AGENT_TIMEOUT,
) -> str:
    """Ask the Buildkite agent for a job OIDC token (`buildkite-agent oidc request-token`).

    The agent authenticates with the job's own variables, so it runs with `env`. An
    agent that outlives `agent_timeout` is killed and not asked again: it already
    retries on its own, so a second try would most likely hang the CI step just as long.
    """
    policy = policy or RetryPolicy()
    agent = shutil.which("buildkite-agent", path=env.get("PATH"))
    if agent is None:
        raise TokenError("buildkite-agent is not on PATH")
    command = [
        agent,
        "oidc",
        "request-token",
        "--audience",
        audience,
        "--lifetime",
        str(BUILDKITE_TOKEN_LIFETIME),
    ]
    # The relay maps pipelines by `organization_id/pipeline_id` (SPEC §2); those claims
    # are optional and must be asked for. The slugs a token always carries are not
    # enough (anyone can name a pipeline anything), so an agent too old to know
    # `--claim` cannot report: better said here than as the relay's 401.
    command += ["--claim", "organization_id,pipeline_id"]
    problem = "no attempt made"
    for attempt in range(1, policy.attempts + 1):
        returncode, stdout, stderr = await _run_agent(command, env, agent_timeout)
        token = stdout.decode("utf-8", "replace").strip()
        if returncode == 0 and _looks_like_token(token):
            return token
        # stderr is the agent's complaint; stdout may hold a token, so it stays unprinted.
        lines = stderr.decode("utf-8", "replace").strip().splitlines()
        reason = lines[-1] if lines else "no token on stdout"
        problem = f"buildkite-agent exited {returncode}: {reason}"
        if "claim" in reason and "not defined" in reason:
            raise TokenError(
                "buildkite-agent is too old to request the organization_id and pipeline_id"
                f" claims (--claim), which the relay maps pipelines by; upgrade it ({reason})"
            )
        if attempt < policy.attempts:
            await sleep(policy.delay(attempt))
    raise TokenError(
        f"cannot mint the OIDC token after {policy.attempts} attempts: {problem}", transient=True
    )


async def _run_agent(
    command: list[str], env: Mapping[str, str], within: float
) -> tuple[int, bytes, bytes]:
    """Run the agent to completion `within` seconds; return its exit status and output.

    The agent gets a process group of its own, so that killing the group also stops
    whatever a wrapper script started: a leftover child would hold the output pipes
    open and keep us waiting after the agent itself was gone. The price: cancelling the
    job signals the job's group, which no longer holds the agent, so an agent caught
    mid-request finishes that request (its own retries are bounded) on its own.
    """
    process = await asyncio.create_subprocess_exec(
        *command,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # a group of its own (`process_group=0` needs Python 3.11)
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), within)
    except asyncio.TimeoutError:
        _kill_group(process.pid)
        await process.wait()
        raise TokenError(
            f"buildkite-agent oidc request-token did not finish within {within:g} s; "
            "it was killed (is the agent able to reach the Buildkite API?)"
        ) from None
    except BaseException:
        _kill_group(process.pid)  # cancelled (Ctrl-C): leave nothing running behind us
        raise
    assert process.returncode is not None  # communicate() returns after the exit
    return process.returncode, stdout, stderr


def _kill_group(pid: int) -> None:
    # The leader is not reaped yet (no wait() has returned), so its pid, and with it the
    # group id, cannot have been reused by an unrelated process.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


class FreshTokens:
    """Hands out a token young enough to still be valid when the relay checks it.

    One callback may be retried for minutes (up to 120 s per `Retry-After`), longer
    than a token lives, so a token is minted again once it is `refresh_after` seconds
    old. Minting on every attempt would be simpler still, but it would put the token
    service's own retries (and their failures) in front of every retry of the callback,
    which is usually a relay blip that a token is no help with.
    """

    def __init__(
        self,
        mint: MintToken,
        *,
        refresh_after: float = TOKEN_REFRESH_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._mint = mint
        self._refresh_after = refresh_after
        self._clock = clock
        self._token: str | None = None
        self._minted_at = 0.0

    async def __call__(self) -> str:
        """The current token, minted anew if there is none or it has grown too old."""
        now = self._clock()
        if self._token is None or now - self._minted_at >= self._refresh_after:
            # The age counts from before the mint: the issuer stamps `iat` meanwhile.
            self._token = await self._mint()
            self._minted_at = now
        return self._token


async def mint_token(
    provider: Provider,
    env: Mapping[str, str],
    audience: str,
    *,
    send: Send,
    policy: RetryPolicy | None = None,
    sleep: Sleep = real_sleep,
) -> str:
    """Mint a token for `audience` from whichever CI system runs this job."""
    if provider is Provider.GITHUB:
        return await mint_github_token(env, audience, send=send, policy=policy, sleep=sleep)
    return await mint_buildkite_token(env, audience, policy=policy, sleep=sleep)
