"""The rate-limit gauges follow GitHub's response headers, per installation."""

from __future__ import annotations

from prometheus_client import REGISTRY

from crcr.github import rate_limit
from crcr.github.client import GitHubClient


def remaining(installation: str, resource: str = "core") -> float | None:
    labels = {"installation": installation, "resource": resource}
    return REGISTRY.get_sample_value("crcr_github_rate_limit_remaining", labels)


async def test_a_call_for_a_repo_reports_its_installations_budget(client: GitHubClient) -> None:
    # The sandbox answers like GitHub: x-ratelimit-limit 5000, -remaining 4999, core.
    await client.dispatch("Org/backend", "pull_request", {"delivery_id": "d-1"})

    assert remaining("org") == 4999
    assert remaining("app") == 4999  # the token was minted with the App's JWT
    labels = {"installation": "org", "resource": "core"}
    assert REGISTRY.get_sample_value("crcr_github_rate_limit_limit", labels) == 5000


def test_headers_update_the_gauges_and_unknown_buckets_stay_in_a_closed_set() -> None:
    rate_limit.observe(
        "acme",
        {
            "x-ratelimit-remaining": "17",
            "x-ratelimit-limit": "30",
            "x-ratelimit-reset": "1800000000",
            "x-ratelimit-resource": "brand_new_bucket",
        },
    )
    rate_limit.observe("acme", {"x-ratelimit-remaining": "not a number"})

    assert remaining("acme", "other") == 17
    labels = {"installation": "acme", "resource": "other"}
    reset = REGISTRY.get_sample_value("crcr_github_rate_limit_reset_timestamp_seconds", labels)
    assert reset == 1_800_000_000


def test_the_installation_label_is_the_account_or_the_app() -> None:
    assert rate_limit.installation_of("PyTorch/pytorch") == "pytorch"
    assert rate_limit.installation_of(None) == "app"
