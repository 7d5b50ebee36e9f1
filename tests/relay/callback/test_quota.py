"""A downstream cannot spend the App's GitHub quota: bounded look-ups and jobs.

Each self-report for an unseen commit costs one `GET /commits/{sha}`; each job of an
L3/L4 backend costs check runs. Both are bounded per repository, with an answer that
names the setting.
"""

from __future__ import annotations

import pytest
from tests.relay import callback_harness as harness
from tests.relay.callback_harness import Relay, callback_body

from crcr.relay.callback import self_report

opener, signing_key, issuer, relay = (
    harness.opener,
    harness.signing_key,
    harness.issuer,
    harness.relay,
)


def nightly(sha: str) -> dict[str, object]:
    return callback_body(sha, "completed", "success", event_type="nightly")


@pytest.fixture
def asked(relay: Relay) -> list[str]:
    """The commits GitHub was asked about; none of them exists."""
    seen: list[str] = []

    async def commit_exists(repo: str, sha: str) -> bool:
        seen.append(sha)
        return False

    relay.deps.commit_exists = commit_exists
    relay.deps.settings = relay.settings.model_copy(update={"self_report_lookups_per_hour": 3})
    return seen


async def test_an_unknown_commit_is_looked_up_once(relay: Relay, asked: list[str]) -> None:
    first = await relay.post(nightly("ab" * 20))
    again = await relay.post(nightly("ab" * 20))

    assert (first.status_code, again.status_code) == (400, 400)
    assert asked == ["ab" * 20]


async def test_invented_commits_spend_at_most_the_hourly_lookups(
    relay: Relay, asked: list[str]
) -> None:
    answers = [await relay.post(nightly(f"{n:040x}")) for n in range(1, 6)]

    assert [a.status_code for a in answers] == [400, 400, 400, 429, 429]
    assert len(asked) == 3
    assert "CRCR_SELF_REPORT_LOOKUPS_PER_HOUR" in answers[-1].json()["detail"]
    assert int(answers[-1].headers["retry-after"]) > 0


async def test_a_dispatch_takes_at_most_the_configured_number_of_jobs(relay: Relay) -> None:
    relay.deps.settings = relay.settings.model_copy(update={"max_jobs_per_dispatch": 3})
    await relay.dispatch("d-1")
    await relay.dispatch("d-2")

    answers = [await relay.post(callback_body("d-1", job_name=f"job-{n}")) for n in range(4)]
    other = await relay.post(callback_body("d-2", job_name="job-9"))

    assert [a.status_code for a in answers] == [200, 200, 200, 400]
    assert "CRCR_MAX_JOBS_PER_DISPATCH" in answers[-1].json()["detail"]
    assert other.status_code == 200
    assert relay.hud.writes == 4


async def test_callbacks_answered_ignored_are_rate_limited_too(relay: Relay) -> None:
    # Issue 33 item 18: anyone can mint an Actions token for a repository of their own;
    # callbacks from repositories below L2 were never rate-limited. Every repository
    # not on the allowlist shares one budget; an L1 repository has its own.
    relay.deps.settings = relay.settings.model_copy(update={"rate_limit_per_min": 3})
    strangers = [f"stranger/repo-{n}" for n in range(5)]

    answers = [await relay.post(callback_body("d-1"), repo=repo) for repo in strangers]
    l1 = [await relay.post(callback_body("d-1"), repo=harness.L1_REPO) for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    assert answers[0].json() == {"status": "ignored"}
    assert int(answers[3].headers["retry-after"]) >= 1
    assert [a.status_code for a in l1] == [200, 200, 200, 429]


async def test_nightly_rows_per_commit_and_day_are_bounded(
    relay: Relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 33 item 19: each new workflow name added a row for the same commit, up to
    # the per-repo rate all day long (~144k rows a day at the default rate).
    monkeypatch.setattr(self_report, "MAX_SELF_REPORTS_PER_COMMIT_DAY", 3)
    sha, other = "ab" * 20, "cd" * 20

    def named(delivery: str, n: int) -> dict[str, object]:
        body = nightly(delivery)
        body["workflow"]["name"] = f"nightly-{n}"  # type: ignore[index]
        return body

    answers = [await relay.post(named(sha, n)) for n in range(4)]
    elsewhere = await relay.post(named(other, 0))

    assert [a.status_code for a in answers] == [200, 200, 200, 400]
    detail = answers[-1].json()["detail"]
    assert detail.startswith("delivery_id: ") and "more than 3" in detail
    assert elsewhere.status_code == 200
    assert len(relay.hud.rows) == 4
