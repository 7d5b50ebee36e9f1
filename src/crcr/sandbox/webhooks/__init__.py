"""The sandbox's webhook sender: realistic GitHub payloads, signed and delivered."""

from crcr.sandbox.webhooks.checks import check_run_event, check_suite_event
from crcr.sandbox.webhooks.delivery import (
    WebhookDelivery,
    encode_payload,
    send,
    sign,
)
from crcr.sandbox.webhooks.merge_groups import merge_group_event
from crcr.sandbox.webhooks.pull_requests import UPSTREAM, pr_body, pull_request_event
from crcr.sandbox.webhooks.pushes import (
    ZERO_SHA,
    branch_deletion,
    branch_push,
    push_event,
    tag_push,
)

__all__ = [
    "UPSTREAM",
    "ZERO_SHA",
    "WebhookDelivery",
    "branch_deletion",
    "branch_push",
    "check_run_event",
    "check_suite_event",
    "encode_payload",
    "merge_group_event",
    "pr_body",
    "pull_request_event",
    "push_event",
    "send",
    "sign",
    "tag_push",
]
