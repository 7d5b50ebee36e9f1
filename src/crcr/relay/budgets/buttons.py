"""Buttons on L3/L4 check runs (SPEC §15): `Re-run failed` and `Snooze 24 h`.

GitHub shows a check run's `actions` as buttons and sends the App a `check_run`
`requested_action` webhook naming the one pressed. Re-run goes through the path a
"Re-run" click takes (`crcr.relay.webhook.reruns`, SPEC §7); snooze keeps that backend's
oncall comment off that PR for 24 hours, remembered in the state store so that every
instance honours it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from crcr.relay.checks.check_actions import RERUN_FAILED, SNOOZE, SNOOZE_SECONDS, SNOOZES
from crcr.relay.checks.check_runs import CHECK_NAME_PREFIX
from crcr.stores.roles import Caches
from crcr.web.error_bodies import error_body

Rerequest = Callable[[str, Mapping[str, Any]], Awaitable[tuple[int, dict[str, Any]]]]


def snooze_key(upstream: str, pr_number: int, repo: str) -> str:
    """Where one backend's snooze on one PR is kept (names ignore case)."""
    return f"{upstream.lower()}#{pr_number}:{repo.lower()}"


class Buttons:
    """Answers `check_run` webhooks: `requested_action` here, the rest as before."""

    def __init__(
        self,
        rerequest: Rerequest,
        store: Caches,
        upstream_repo: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._rerequest = rerequest
        self._store = store
        self._upstream = upstream_repo
        self._clock = clock

    async def handle(self, event: str, payload: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """The webhook's status and body for a re-request or a pressed button."""
        if event != "check_run" or payload.get("action") != "requested_action":
            return await self._rerequest(event, payload)
        identifier = str((payload.get("requested_action") or {}).get("identifier") or "")
        if identifier == RERUN_FAILED:
            return await self._rerequest(event, payload)
        if identifier == SNOOZE:
            return await self._snooze(payload)
        return 200, {"ignored": True, "reason": f"unknown requested action {identifier!r}"}

    async def _snooze(self, payload: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        check_run = payload.get("check_run") or {}
        name = str(check_run.get("name") or "")
        segments = name.removeprefix(CHECK_NAME_PREFIX).split("/")
        if not name.startswith(CHECK_NAME_PREFIX) or len(segments) < 3:
            return 200, {"ignored": True, "reason": f"{name!r} is not a crcr check run"}
        repo = f"{segments[0]}/{segments[1]}"
        pr_number = _pr_number(check_run)
        if pr_number is None:
            return 422, error_body("check_run: names no pull request to snooze", field="check_run")
        until = self._clock() + SNOOZE_SECONDS
        key = snooze_key(self._upstream, pr_number, repo)
        await self._store.cache_set(SNOOZES, key, str(until), SNOOZE_SECONDS)
        return 200, {"ok": True, "snoozed": {"repo": repo, "pr_number": pr_number, "until": until}}

    async def snoozed(self, pr_number: int, repo: str) -> bool:
        """Whether `repo`'s oncall comment on PR `pr_number` is snoozed now."""
        until = await self._store.cache_get(SNOOZES, snooze_key(self._upstream, pr_number, repo))
        return until is not None and float(until) > self._clock()


def _pr_number(check_run: Mapping[str, Any]) -> int | None:
    """The PR a check run is about: our `external_id` (`<run_id>:<pr>`), else GitHub's list."""
    number = str(check_run.get("external_id") or "").partition(":")[2]
    if number.isdigit() and int(number) > 0:
        return int(number)
    for pull in check_run.get("pull_requests") or ():
        if isinstance(pull, Mapping) and isinstance(pull.get("number"), int):
            return int(pull["number"])
    return None
