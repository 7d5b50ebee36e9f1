"""The doctor's level line: what the one level source says, and a stuck demotion fails."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from crcr.config.settings import load_settings
from crcr.hud.levels.providers import Decline, Demotion, Override, Standing
from crcr.relay.allowlist.model import Allowlist
from crcr.relay.doctor.checks import Subject, standing_check

NOW = datetime.now(UTC)


async def no_allowlist() -> Allowlist:
    return Allowlist()


def subject(interval: int) -> Subject:
    settings = load_settings(levels_sync_interval=interval)
    return Subject("o/r", settings, None, no_allowlist, "allowlist.yml", None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("age", "url", "ok", "tail"),
    [
        (timedelta(minutes=5), None, True, "pull request not opened yet"),
        (timedelta(hours=3), None, False, "pull request still not opened"),
        (timedelta(hours=3), "https://github.com/u/p/pull/4", True, "pull/4"),
    ],
)
def test_a_demotion_whose_pull_request_never_opens_fails(
    age: timedelta, url: str | None, ok: bool, tail: str
) -> None:
    standing = Standing("L3", demotion=Demotion(NOW - age, url), level="L4")

    check = standing_check(subject(3600), "L4", standing)

    assert check.ok is ok and check.answer.endswith(tail)
    assert check.answer.startswith("L4; new jobs treated as L3; temporarily demoted since")
    if not ok:
        assert check.next_step is not None and "crcr levels sync" in check.next_step


def test_an_override_and_a_decline_are_said_and_pass() -> None:
    standing = Standing(
        "L2",
        declined=Decline("maintainer", NOW, NOW + timedelta(days=7)),
        override=Override("L2", NOW + timedelta(days=3), "migration", "ops"),
        level="L3",
    )

    check = standing_check(subject(3600), "L3", standing)

    assert check.ok
    assert "new jobs treated as L2; override to L2 until" in check.answer
    assert "by ops: migration" in check.answer
    assert "demotion declined by maintainer, none until" in check.answer
