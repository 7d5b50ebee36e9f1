"""The demo's running parts: sandbox GitHub and issuer, relay + HUD, simulated CI, upstream.

Everything runs in one event loop. The sandbox and the relay each get a loopback
server, and every hop between them (webhook, dispatch, token request, callback, check
run) is real HTTP, so the demo exercises exactly what a deployment does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from starlette.routing import Mount

from crcr.app import create_app
from crcr.config.settings import Settings, SettingsError, load_settings
from crcr.demo.backends import DEMO_BACKENDS, DEMO_UPSTREAM, allowlist_yaml, devices, workflows
from crcr.demo.culprit_story import break_main_later, remember_push
from crcr.demo.health import DemoHealth, with_canary
from crcr.demo.levels import (
    ALLOWLIST_PATH,
    ALLOWLIST_URL,
    CRITERIA,
    SYNC_INTERVAL,
    backfill_history,
    decline_when_proposed,
    degrade_later,
)
from crcr.demo.options import DemoOptions
from crcr.demo.progress import DemoProgress, HudCounts, read_hud_counts, retry_queue_depth
from crcr.demo.servers import EmbeddedServer, bind_socket, socket_url
from crcr.demo.traffic import UpstreamEvent, UpstreamTraffic
from crcr.sandbox.github_http import WEB_PATH
from crcr.sandbox.github_server import create_sandbox_app
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SandboxIssuer
from crcr.sandbox.pr_view import pr_view_routes, remember_pull_request
from crcr.sandbox.simulated_ci import SimulatedCI
from crcr.sandbox.webhooks import WebhookDelivery, send

log = logging.getLogger(__name__)

STATE_FILE = "demo-state.json"
ALLOWLIST_FILE = "demo-allowlist.yaml"
FIRST_PR_NUMBER = 150_001
RELAY_PULLS_AFTER = 900_000
"""The relay's pull requests in the sandbox are numbered from here on, clear of the traffic's."""
SIMULATED_ZOMBIE_TIMEOUT = 2 * 3600.0
"""Simulated seconds before a hanging job is a zombie, so zombies appear during a demo."""


class DemoError(Exception):
    """The demo cannot start; the message is one line saying why."""


@dataclass
class TrafficCounts:
    """What the upstream side has sent so far."""

    events_sent: int = 0
    dispatches: int = 0
    webhook_errors: int = 0
    last_event: str | None = None


def _previous_state(data_dir: Path) -> dict[str, Any]:
    """What the previous run left in the data directory (empty when nothing usable)."""
    try:
        state = json.loads((data_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _next_pr_number(data_dir: Path) -> int:
    """Continue numbering PRs after the previous demo run, so history does not collide."""
    try:
        return max(int(_previous_state(data_dir)["next_pr"]), FIRST_PR_NUMBER)
    except (KeyError, TypeError, ValueError):
        return FIRST_PR_NUMBER


def relay_settings(
    options: DemoOptions,
    *,
    sandbox_url: str,
    github: SandboxGitHub,
    issuer: SandboxIssuer,
    health: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings pointing the relay at the sandbox, with fresh secrets and stores in the data dir.

    Every field that could otherwise come from a `CRCR_*` variable is given here, so the
    demo never talks to a real GitHub, Redis or PostgreSQL configured in the shell.
    """
    return load_settings(
        upstream_repo=DEMO_UPSTREAM,
        webhook_secret=secrets.token_urlsafe(32),
        github_app_id=str(github.app.app_id),
        github_app_private_key=github.app.private_key_pem,
        github_api_url=sandbox_url,
        allowlist=ALLOWLIST_URL,
        levels_sync_interval=SYNC_INTERVAL,
        level_criteria=CRITERIA,
        oidc_issuers=[{"issuer": issuer.issuer, "kind": "github"}],
        redis_url=None,
        data_dir=options.data_dir,
        database_url=None,
        hud_url=None,
        hud_token=secrets.token_urlsafe(32),
        rate_limit_per_min=1_000_000,
        zombie_timeout=max(30, round(SIMULATED_ZOMBIE_TIMEOUT / options.speed)),
        push_branches=[],
        public_docs=True,  # the demo is for looking around, /docs included
        **(health or {}),  # the canary and the alert sink (crcr.demo.health)
    )


class DemoStack:
    """Start, observe and stop the whole loop."""

    def __init__(self, options: DemoOptions) -> None:
        self.options = options
        self.started_at = time.monotonic()
        self.first_result_after: float | None = None
        self.counts = TrafficCounts()
        self.github = SandboxGitHub()
        self._rng = random.Random(options.seed)  # noqa: S311 - a simulation, not crypto
        self._servers: list[EmbeddedServer] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(30.0))
        self._hud = HudCounts()
        self.simulated_ci: SimulatedCI | None = None
        self.traffic: UpstreamTraffic | None = None
        self.dashboard_url = ""
        self._relay_url = ""
        self._secret = ""
        self._relay_app: FastAPI | None = None
        self._history_stored = False
        self.health = DemoHealth(options.speed)

    async def start(self) -> None:
        """Bring everything up, then send the first event at once."""
        options = self.options
        try:
            options.data_dir.mkdir(parents=True, exist_ok=True)
            (options.data_dir / ALLOWLIST_FILE).write_text(
                allowlist_yaml(with_canary(DEMO_BACKENDS))
            )
        except OSError as exc:
            raise DemoError(f"cannot use --data-dir {options.data_dir}: {exc.strerror}") from None
        try:
            relay_socket = bind_socket(options.host, options.port)
        except OSError as exc:
            raise DemoError(
                f"cannot listen on {options.host}:{options.port} ({exc.strerror}); "
                "pass another --port (0 picks a free one)"
            ) from None
        sandbox_socket = bind_socket("127.0.0.1", 0)
        sandbox_url = socket_url(sandbox_socket)
        # A fresh issuer path per run: the relay caches JWKS by issuer URL, and the
        # issuer's key is new each run.
        issuer = SandboxIssuer(f"{sandbox_url}/oidc/{secrets.token_hex(4)}")
        self.github.install_app(DEMO_UPSTREAM, *(b.repo for b in with_canary(DEMO_BACKENDS)))
        self.github.add_file(
            DEMO_UPSTREAM, ALLOWLIST_PATH, allowlist_yaml(with_canary(DEMO_BACKENDS))
        )
        # The relay's own pull requests (its level changes) are numbered apart from the
        # traffic's, which the sandbox records as they arrive: a pull request the traffic
        # opens later must never take the number, and so the title, of one the relay opened.
        self.github.add_repo(DEMO_UPSTREAM).last_number = RELAY_PULLS_AFTER
        try:
            settings = relay_settings(
                options,
                sandbox_url=sandbox_url,
                github=self.github,
                issuer=issuer,
                health=self.health.settings(),
            )
        except SettingsError as exc:
            raise DemoError(str(exc)) from None
        assert settings.webhook_secret is not None
        self._secret = settings.webhook_secret.get_secret_value()
        issuer_path = issuer.issuer.removeprefix(sandbox_url)
        sandbox_app = create_sandbox_app(
            self.github,
            extra_routes=[Mount(issuer_path, routes=issuer.routes()), *pr_view_routes(self.github)],
        )
        sandbox = EmbeddedServer(sandbox_app, sandbox_socket, lifespan="off")
        # The demo's pull requests exist only in the sandbox: the dashboard links its pages.
        self._relay_app = create_app(settings, github_web=f"{sandbox_url}{WEB_PATH}")
        relay = EmbeddedServer(self._relay_app, relay_socket)
        self._relay_url = relay.url
        self.dashboard_url = f"{relay.url}/crcr"
        for server in (sandbox, relay):
            await server.start()
            self._servers.append(server)
        await self._backfill_history()
        self.simulated_ci = SimulatedCI(
            self.github,
            issuer,
            callback_url=f"{self._relay_url}/github/callback",
            workflows=workflows(),
            speed=options.speed,
            seed=self._rng.randrange(2**32),
        )
        await self.simulated_ci.start()
        await self.health.start(
            self.github,
            issuer,
            f"{self._relay_url}/github/callback",
            hud=self._relay_app.state.runtime.hud,
            upstream=DEMO_UPSTREAM,
            seed=self._rng.randrange(2**32),
        )
        self.traffic = UpstreamTraffic(
            random.Random(self._rng.randrange(2**32)),  # noqa: S311
            upstream=DEMO_UPSTREAM,
            devices=devices(),
            first_pr_number=_next_pr_number(options.data_dir),
        )
        self._tasks.append(asyncio.create_task(self._send_traffic(), name="demo-upstream"))
        self._tasks.append(asyncio.create_task(self._time_first_result(), name="demo-first"))
        self._tasks.append(
            asyncio.create_task(
                degrade_later(self.simulated_ci, options.degrade_after), name="demo-degrade"
            )
        )
        self._tasks.append(
            asyncio.create_task(
                decline_when_proposed(self.github, self._deliver), name="demo-decline"
            )
        )
        self._tasks.append(
            asyncio.create_task(
                break_main_later(
                    self.github,
                    self.simulated_ci,
                    self._deliver,
                    self._relay_app.state.runtime.hud.engine,
                    after=options.degrade_after,
                ),
                name="demo-culprit",
            )
        )

    async def _backfill_history(self) -> None:
        """Days of history before the first event, once per data directory."""
        self._history_stored = bool(_previous_state(self.options.data_dir).get("history"))
        if self.options.history_days == 0 or self._history_stored or self._relay_app is None:
            return
        hud = self._relay_app.state.runtime.hud
        rng = random.Random(self._rng.randrange(2**32))  # noqa: S311
        await backfill_history(hud, self.options.history_days, rng)
        self._history_stored = True

    async def stop(self) -> None:
        """Stop traffic, then the simulated CI, then the servers; keep the data."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.simulated_ci is not None:
            await self.simulated_ci.stop()
        await self.health.stop()
        for server in reversed(self._servers):
            await server.stop()
        await self._http.aclose()
        if self.traffic is not None:
            with contextlib.suppress(OSError):
                state = {"next_pr": self.traffic.next_number, "history": self._history_stored}
                (self.options.data_dir / STATE_FILE).write_text(json.dumps(state))

    async def _send_traffic(self) -> None:
        assert self.traffic is not None
        await self._deliver(self.traffic.open_pr())
        while True:
            await asyncio.sleep(self.traffic.pause_before_next(self.options.rate))
            await self._deliver(self.traffic.next_event())

    async def _deliver(self, event: UpstreamEvent) -> None:
        """Sign and send one webhook to the relay, as GitHub would."""
        remember_pull_request(self.github, event.payload)
        remember_push(self.github, event)
        delivery = WebhookDelivery.build(event.event, event.payload, self._secret)
        self.counts.last_event = event.summary
        try:
            response = await send(self._http, f"{self._relay_url}/github/webhook", delivery)
        except httpx.HTTPError as exc:
            self.counts.webhook_errors += 1
            log.warning("webhook %s not delivered: %s", delivery.delivery_id, exc)
            return
        self.counts.events_sent += 1
        if response.status_code != 200:
            self.counts.webhook_errors += 1
            log.warning("relay answered webhook with HTTP %d", response.status_code)
            return
        self.counts.dispatches += len(response.json().get("dispatched", []))

    async def _time_first_result(self) -> None:
        """Note when the dashboard first shows a job of this run, to a quarter second.

        Results kept from an earlier run are already there, so it waits for the count
        to grow past what it was at start-up.
        """
        state = self._relay_app.state if self._relay_app is not None else None
        before = (await read_hud_counts(state, self._hud)).completed
        while self.first_result_after is None:
            self._hud = await read_hud_counts(state, self._hud)
            if self._hud.completed > before:
                self.first_result_after = time.monotonic() - self.started_at
                return
            await asyncio.sleep(0.25)

    def relay_pull_requests(self) -> list[dict[str, Any]]:
        """The open pull requests the relay opened upstream (its level changes), not the
        upstream traffic's, which the sandbox also keeps for their pages."""
        return [
            pull
            for pull in self.github.pulls(DEMO_UPSTREAM, state="open")
            if pull["user"].get("type") == "Bot"
        ]

    async def progress(self) -> DemoProgress:
        """Everything the terminal view shows, read from the live parts."""
        elapsed = time.monotonic() - self.started_at
        state = self._relay_app.state if self._relay_app is not None else None
        self._hud = await read_hud_counts(state, self._hud)
        assert self.simulated_ci is not None
        return DemoProgress(
            elapsed=elapsed,
            dashboard_url=self.dashboard_url,
            events_sent=self.counts.events_sent,
            last_event=self.counts.last_event,
            dispatches=self.counts.dispatches,
            webhook_errors=self.counts.webhook_errors,
            ci=self.simulated_ci.snapshot(),
            hud=self._hud,
            retry_queue=await retry_queue_depth(state),
            first_result_after=self.first_result_after,
            level_changes=tuple(
                f"#{pull['number']} {pull['title']}" for pull in self.relay_pull_requests()
            ),
            alerts=self.health.receiver.lines,
        )
