"""Dispatch records: what the relay sent to a downstream repo, written before sending.

A callback is bound to its record (SPEC §5 step 6): check runs and HUD attribution use
the head SHA, PR number and labels stored here, never the echoed body, so a downstream
repo cannot put a check on a commit it was not dispatched for. Here, in the job core,
because the webhook writes them and the callback, sweeper and checks read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any


class DispatchStatus(StrEnum):
    """Lifecycle of one (delivery, repo) dispatch."""

    PENDING = "pending"
    DISPATCHED = "DISPATCHED"
    FAILED = "failed"
    SUPERSEDED = "superseded"
    """Closed by a newer head of its PR (SPEC §15); its late callbacks are still accepted."""


_ACCEPTING = frozenset(
    {DispatchStatus.PENDING, DispatchStatus.DISPATCHED, DispatchStatus.SUPERSEDED}
)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _shallow_fields(instance: Any) -> dict[str, Any]:
    """A dataclass's fields by name, values as they are (its field names looked up once:
    `dataclasses.fields` builds a tuple of Field objects on every call)."""
    names = _FIELD_NAMES.get(type(instance))
    if names is None:
        names = _FIELD_NAMES[type(instance)] = tuple(field.name for field in fields(instance))
    return {name: getattr(instance, name) for name in names}


@dataclass(frozen=True)
class UpstreamContext:
    """The upstream facts a dispatch carried: what a callback is checked against."""

    upstream_repo: str
    event_type: str
    head_sha: str
    pr_number: int | None
    labels: tuple[str, ...] = ()
    action: str | None = None


MERGE_GROUP_EVENT = "merge_group"
"""A merge queue's group (SPEC §15): sent to L4 backends, its own check run on the group."""
CANCEL_EVENT = "crcr_cancel"
"""The dispatch telling a downstream it may cancel a superseded head's runs (SPEC §15)."""

RELAY_OWN_EVENTS = frozenset({"crcr_probe", "crcr_bisect", "crcr_aa", CANCEL_EVENT})
"""Dispatches the relay sends of its own (SPEC §13, §14, §15): their jobs put nothing on
the upstream — no check run, no confirming re-run, no oncall comment — and none is ever
superseded."""


@dataclass(frozen=True)
class DispatchRecord:
    """One (delivery_id, repo) dispatch as kept in the state store."""

    delivery_id: str
    repo: str
    status: DispatchStatus
    context: UpstreamContext
    sent_at: float
    trimmed: bool = False
    error: str | None = None
    superseded_by: str | None = None
    """The head SHA that superseded this dispatch's (SPEC §15); kept whatever the status
    says afterwards (a queued retry may still mark the record sent)."""

    @property
    def accepts_callbacks(self) -> bool:
        """Pending counts: a fast downstream may answer before the relay marks success;
        a superseded dispatch's late callbacks are accepted, and shown as superseded."""
        return self.status in _ACCEPTING

    @property
    def jobs_list(self) -> str:
        """The state store list its jobs are added to as they start (SPEC §15: a newer
        head supersedes the running ones, at every level)."""
        return f"jobs:{self.delivery_id}:{self.repo.lower()}"

    def superseded(self, by: str) -> DispatchRecord:
        """This dispatch once a newer head (`by`) of its PR closed it."""
        return replace(self, status=DispatchStatus.SUPERSEDED, superseded_by=by)

    def to_store(self) -> dict[str, Any]:
        """Flatten into the JSON-able mapping the state store keeps.

        Field by field rather than `dataclasses.asdict`, which deep-copies every value:
        each accepted `in_progress` callback stores its dispatch record in the job.
        """
        flat = _shallow_fields(self)
        if flat["superseded_by"] is None:
            del flat["superseded_by"]  # records written before SPEC §15 read the same
        flat["status"] = str(self.status)
        flat["context"] = _shallow_fields(self.context)
        flat["context"]["labels"] = list(self.context.labels)
        return flat

    @classmethod
    def from_store(cls, raw: Mapping[str, Any]) -> DispatchRecord:
        """Rebuild from the state store's mapping."""
        context = dict(raw["context"])
        context["labels"] = tuple(context.get("labels") or ())
        return cls(
            delivery_id=raw["delivery_id"],
            repo=raw["repo"],
            status=DispatchStatus(raw["status"]),
            context=UpstreamContext(**context),
            sent_at=float(raw["sent_at"]),
            trimmed=bool(raw.get("trimmed", False)),
            error=raw.get("error"),
            superseded_by=raw.get("superseded_by"),
        )

    def with_status(self, status: DispatchStatus, error: str | None = None) -> DispatchRecord:
        """A copy in another status."""
        return replace(self, status=status, error=error)
