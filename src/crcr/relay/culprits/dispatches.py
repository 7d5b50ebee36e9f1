"""Send one commit's push to one backend as `crcr_bisect` or `crcr_aa` (SPEC §14).

Through the ordinary fan-out: the pending dispatch record is written before the send
(so the backend's callbacks bind to it: OIDC, binding, state machine, like any other),
the payload is trimmed to GitHub's cap, a failed send goes to the retry queue. The
payload is the push GitHub would have sent for that commit alone; `after` and
`head_commit.id` name it, which the callback's echo is bound to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crcr.relay.jobs.dispatch import UpstreamContext
from crcr.relay.webhook.client_payload import build_client_payload
from crcr.relay.webhook.fanout import DispatchOutcome, FanOut, dispatch_to_downstreams

ZERO_SHA = "0" * 40


def push_payload(
    repository: Mapping[str, Any], sha: str, *, parent: str | None, title: str = ""
) -> dict[str, Any]:
    """The `push` webhook payload of commit `sha` landing on the default branch."""
    branch = repository.get("default_branch") or "main"
    commit = {"id": sha, "message": title, "distinct": True}
    return {
        "ref": f"refs/heads/{branch}",
        "before": parent or ZERO_SHA,
        "after": sha,
        "created": False,
        "deleted": False,
        "forced": False,
        "commits": [commit],
        "head_commit": commit,
        "repository": dict(repository),
    }


async def send_commit(
    fanout: FanOut,
    *,
    event_type: str,
    delivery_id: str,
    upstream_repo: str,
    repo: str,
    payload: Mapping[str, Any],
    extra: Mapping[str, Any],
) -> DispatchOutcome:
    """Dispatch `payload` (a push) to `repo` alone, with `extra` beside it in `client_payload`."""
    built = build_client_payload(event_type, delivery_id, payload)
    client_payload = {**built.value, **extra}
    sha = str(payload["after"])
    [outcome] = await dispatch_to_downstreams(
        fanout,
        delivery_id=delivery_id,
        context=UpstreamContext(upstream_repo, event_type, sha, None),
        client_payload=client_payload,
        trimmed=built.trimmed,
        repos=[repo],
    )
    return outcome
