"""The webhook sender produces GitHub-shaped, correctly signed deliveries.

The fixture files under tests/fixtures/webhooks/ are this module's builders' output;
after changing a builder, regenerate them with `python tests/sandbox/test_webhooks.py`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from crcr.relay.webhook.events import Dispatch, Ignore, LabelDevice, Rerequest, route_event
from crcr.relay.webhook.signature import verify_signature
from crcr.sandbox.webhooks import (
    ZERO_SHA,
    WebhookDelivery,
    branch_deletion,
    branch_push,
    check_run_event,
    check_suite_event,
    encode_payload,
    pr_body,
    pull_request_event,
    send,
    sign,
    tag_push,
)

FIXTURE_DIR = Path(__file__).parents[1] / "fixtures" / "webhooks"
FIXTURES: dict[str, Callable[[], dict[str, Any]]] = {
    "pull_request_opened.json": lambda: pull_request_event(
        "opened", number=1234, labels=["module: inductor", "ciflow/trunk"]
    ),
    "pull_request_labeled.json": lambda: pull_request_event(
        "labeled", number=1234, labels=["module: inductor"], label_name="ciflow/crcr/cuda"
    ),
    "push_main.json": lambda: branch_push("main", commit_count=2),
    "check_run_rerequested.json": lambda: check_run_event("rerequested", pull_number=1234),
}
SECRET = "webhook-secret-for-tests"


# --- signing ---------------------------------------------------------------------


def test_signature_matches_githubs_documented_example() -> None:
    # From GitHub's "Validating webhook deliveries" documentation.
    assert sign(b"Hello, World!", "It's a Secret to Everybody") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_delivery_carries_hookshot_headers_and_a_valid_signature() -> None:
    delivery = WebhookDelivery.build("pull_request", pull_request_event("opened"), SECRET)
    headers = delivery.headers
    assert headers["X-GitHub-Event"] == "pull_request"
    assert (
        uuid.UUID(headers["X-GitHub-Delivery"])
        and delivery.delivery_id == (headers["X-GitHub-Delivery"])
    )
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("GitHub-Hookshot/")
    assert headers["X-Hub-Signature-256"] == sign(delivery.body, SECRET)
    verify_signature(SECRET.encode(), delivery.body, headers["X-Hub-Signature-256"])
    assert json.loads(delivery.body)["action"] == "opened"


def test_redelivery_reuses_the_delivery_id_and_identical_bytes() -> None:
    payload = pull_request_event("synchronize")
    first = WebhookDelivery.build("pull_request", payload, SECRET)
    again = WebhookDelivery.build("pull_request", payload, SECRET, delivery_id=first.delivery_id)
    assert again == first


def test_negative_variants_drop_headers_or_tamper_with_the_body() -> None:
    delivery = WebhookDelivery.build("push", branch_push(), SECRET)
    unsigned = delivery.with_headers(X_Hub_Signature_256=None)
    assert "X-Hub-Signature-256" not in unsigned.headers
    assert delivery.with_headers(X_GitHub_Event="issues").headers["X-GitHub-Event"] == "issues"
    tampered = delivery.with_body(delivery.body.replace(b"main", b"evil"))
    assert tampered.headers["X-Hub-Signature-256"] != sign(tampered.body, SECRET)


async def test_send_posts_the_exact_bytes_and_headers() -> None:
    received: list[tuple[bytes, dict[str, str]]] = []

    async def receiver(request: Request) -> JSONResponse:
        received.append((await request.body(), dict(request.headers)))
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/github/webhook", receiver, methods=["POST"])])
    delivery = WebhookDelivery.build("check_suite", check_suite_event(), SECRET)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        response = await send(client, "http://relay.test/github/webhook", delivery)

    assert response.status_code == 200
    ((body, headers),) = received
    assert body == delivery.body
    assert headers["x-github-event"] == "check_suite"
    assert headers["x-hub-signature-256"] == sign(body, SECRET)


# --- payload shapes ----------------------------------------------------------------


def test_pull_request_opened_has_the_bulk_of_a_real_payload() -> None:
    payload = pull_request_event("opened", number=7)
    pr = payload["pull_request"]
    assert 20_000 <= len(encode_payload(payload)) <= 30_000
    assert {"self", "html", "issue", "comments", "commits", "statuses"} <= set(pr["_links"])
    assert pr["head"]["repo"]["full_name"] == pr["base"]["repo"]["full_name"] == "pytorch/pytorch"
    assert pr["head"]["repo"]["compare_url"].endswith("/compare/{base}...{head}")
    assert pr["user"]["followers_url"] == "https://api.github.com/users/contributor/followers"
    assert pr["number"] == payload["number"] == 7
    assert pr["state"] == "open" and pr["body"]
    assert payload["repository"]["default_branch"] == "main"


def test_builders_are_deterministic() -> None:
    assert pull_request_event("opened") == pull_request_event("opened")
    assert branch_push() == branch_push()
    assert pull_request_event("opened", number=1) != pull_request_event("opened", number=2)


def test_synchronize_reports_before_and_after() -> None:
    payload = pull_request_event("synchronize", head_sha="a" * 40, before="b" * 40)
    assert (payload["before"], payload["after"]) == ("b" * 40, "a" * 40)
    assert payload["pull_request"]["head"]["sha"] == "a" * 40


def test_labeled_names_the_label_and_lists_it_on_the_pr() -> None:
    payload = pull_request_event("labeled", labels=["bug"], label_name="ciflow/crcr/cuda")
    assert payload["label"]["name"] == "ciflow/crcr/cuda"
    assert [label["name"] for label in payload["pull_request"]["labels"]] == [
        "bug",
        "ciflow/crcr/cuda",
    ]


def test_closed_with_merge_sets_merge_fields() -> None:
    merged = pull_request_event("closed", merged=True)["pull_request"]
    assert (merged["state"], merged["merged"]) == ("closed", True)
    assert merged["merged_at"] and merged["merged_by"]["login"] == "merge-bot"
    unmerged = pull_request_event("closed")["pull_request"]
    assert unmerged["merged"] is False and unmerged["merged_at"] is None


def test_fork_pr_has_a_head_repo_different_from_the_base() -> None:
    pr = pull_request_event("opened", head_repo="someone/pytorch")["pull_request"]
    assert pr["head"]["repo"]["full_name"] == "someone/pytorch"
    assert pr["head"]["label"].startswith("someone:")


@pytest.mark.parametrize("size", [1, 1000, 70_000])
def test_pr_body_has_exactly_the_requested_size(size: int) -> None:
    assert len(pr_body(size).encode()) == size


def test_large_body_pushes_the_payload_past_githubs_dispatch_cap() -> None:
    payload = pull_request_event("opened", body_size=70_000)
    assert len(encode_payload(payload)) > 65_535


def test_push_variants() -> None:
    push = branch_push("main", commit_count=3)
    assert push["ref"] == "refs/heads/main" and len(push["commits"]) == 3
    assert push["head_commit"]["id"] == push["after"] == push["commits"][-1]["id"]
    assert isinstance(push["repository"]["created_at"], int)  # push payloads use epochs
    assert push["repository"]["owner"]["name"] == "pytorch"

    tag = tag_push("v2.6.0")
    assert (tag["ref"], tag["before"], tag["created"]) == ("refs/tags/v2.6.0", ZERO_SHA, True)

    gone = branch_deletion("old-feature")
    assert (gone["after"], gone["deleted"], gone["commits"]) == (ZERO_SHA, True, [])
    assert gone["head_commit"] is None


def test_check_events_point_at_the_pull_request_and_commit() -> None:
    run = check_run_event(head_sha="c" * 40, pull_number=42)
    assert run["action"] == "rerequested"
    assert run["check_run"]["head_sha"] == run["check_run"]["check_suite"]["head_sha"] == "c" * 40
    assert run["check_run"]["pull_requests"][0]["number"] == 42
    suite = check_suite_event(head_sha="c" * 40)
    assert suite["check_suite"]["head_commit"]["id"] == "c" * 40
    assert suite["check_suite"]["app"]["slug"] == "crcr-relay"


@pytest.mark.parametrize(
    ("event", "payload", "decision"),
    [
        ("pull_request", pull_request_event("opened"), Dispatch),
        ("pull_request", pull_request_event("synchronize"), Dispatch),
        ("pull_request", pull_request_event("labeled", label_name="ciflow/crcr/cuda"), LabelDevice),
        ("push", branch_push("main"), Dispatch),
        ("push", tag_push(), Ignore),
        ("push", branch_deletion("main"), Ignore),
        ("check_run", check_run_event(), Rerequest),
        ("check_suite", check_suite_event(), Rerequest),
    ],
)
def test_the_relay_routes_these_payloads_as_github_ones(
    event: str, payload: dict[str, Any], decision: type
) -> None:
    assert isinstance(route_event(event, payload, upstream_repo="pytorch/pytorch"), decision)


# --- fixture files -------------------------------------------------------------------


def _render(payload: dict[str, Any]) -> str:
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_files_are_the_builders_output(name: str) -> None:
    assert (FIXTURE_DIR / name).read_text() == _render(FIXTURES[name]())


def test_pull_request_opened_fixture_is_realistically_sized() -> None:
    size = (FIXTURE_DIR / "pull_request_opened.json").stat().st_size
    assert 20_000 <= size <= 35_000


if __name__ == "__main__":
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    for fixture_name, build in FIXTURES.items():
        (FIXTURE_DIR / fixture_name).write_text(_render(build()))
