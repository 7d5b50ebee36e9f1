"""The dispatch's client_payload always fits GitHub's 65,535-character cap."""

from typing import Any

from crcr.relay.webhook.client_payload import (
    GITHUB_CLIENT_PAYLOAD_LIMIT,
    build_client_payload,
    encoded_size,
)


def user(login: str) -> dict[str, Any]:
    return {
        "login": login,
        "id": 1,
        "node_id": "MDQ6VXNlcjE=",
        "avatar_url": "https://avatars.githubusercontent.com/u/1?v=4",
        "followers_url": f"https://api.github.com/users/{login}/followers",
        "type": "User",
    }


def big_pr(body_size: int) -> dict[str, Any]:
    repo = {
        "id": 65600975,
        "name": "pytorch",
        "full_name": "pytorch/pytorch",
        "owner": user("pytorch"),
        "default_branch": "main",
        "hooks_url": "https://api.github.com/repos/pytorch/pytorch/hooks",
        "html_url": "https://github.com/pytorch/pytorch",
    }
    return {
        "action": "opened",
        "number": 1234,
        "pull_request": {
            "number": 1234,
            "body": "x" * body_size,
            "user": user("contributor"),
            "labels": [{"name": "ciflow/crcr/xpu", "color": "ededed"}],
            "head": {"sha": "c" * 40, "ref": "topic", "repo": repo, "user": user("contributor")},
            "base": {"sha": "d" * 40, "ref": "main", "repo": repo},
            "_links": {"self": {"href": "https://api.github.com/repos/pytorch/pytorch/pulls/1"}},
        },
        "repository": repo,
        "sender": user("contributor"),
    }


def test_a_small_payload_is_wrapped_untouched() -> None:
    payload = big_pr(100)
    result = build_client_payload("pull_request", "d-1", payload)
    assert result.trimmed is False
    assert result.value == {"event_type": "pull_request", "delivery_id": "d-1", "payload": payload}
    assert result.size == encoded_size(result.value)


def test_a_large_pr_body_is_dropped_and_binding_facts_kept() -> None:
    result = build_client_payload("pull_request", "d-2", big_pr(100_000))
    assert result.trimmed is True
    assert result.size <= GITHUB_CLIENT_PAYLOAD_LIMIT
    pr = result.value["payload"]["pull_request"]
    assert "body" not in pr
    assert "_links" not in pr
    assert pr["head"]["sha"] == "c" * 40
    assert pr["number"] == 1234
    assert pr["labels"][0]["name"] == "ciflow/crcr/xpu"
    assert pr["user"] == {"login": "contributor"}
    assert result.value["payload"]["repository"]["full_name"] == "pytorch/pytorch"


def test_a_huge_push_is_cut_to_its_essentials() -> None:
    push = {
        "ref": "refs/heads/main",
        "before": "e" * 40,
        "after": "f" * 40,
        "repository": {"full_name": "pytorch/pytorch", "default_branch": "main"},
        "commits": [{"id": str(i), "message": "m" * 1000} for i in range(200)],
        "head_commit": {"id": "f" * 40, "message": "m" * 1000},
    }
    result = build_client_payload("push", "d-3", push, limit=2_000)
    assert result.trimmed is True
    assert result.size <= 2_000
    assert result.value["payload"]["after"] == "f" * 40
    assert result.value["payload"]["head_commit"] == {"id": "f" * 40}
