"""Upstream activity for the demo: PRs opened, updated, labelled and closed, pushes to main.

Pure: a random generator and the state of the open PRs go in, webhook payloads come
out (built by the sandbox's webhook builders); sending them is the caller's job.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crcr.sandbox.webhooks import branch_push, pull_request_event

LABEL_PREFIX = "ciflow/crcr/"
_AUTHORS = ("ada", "grace", "linus", "margaret", "ken", "barbara", "guido", "yukihiro")
_TITLES = (
    "[inductor] Fuse pointwise epilogues into reductions",
    "[dynamo] Graph break on unsupported context manager",
    "[aten] Vectorise the tail of the softmax kernel",
    "[distributed] Overlap all-gather with the forward pass",
    "[export] Preserve custom op metadata across decomposition",
    "[quantization] Per-channel observers for depthwise convs",
    "[profiler] Record device memory at kernel boundaries",
    "[optim] Foreach implementation for Adafactor",
)


@dataclass
class OpenPr:
    """A pull request that is still open upstream."""

    number: int
    head_sha: str
    title: str
    author: str
    labels: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class UpstreamEvent:
    """One webhook to deliver, with a few words for the progress display."""

    event: str
    payload: dict[str, Any]
    summary: str


class UpstreamTraffic:
    """Invents a plausible stream of upstream events, one at a time."""

    WEIGHTS = (("open", 3.0), ("synchronize", 3.0), ("label", 1.0), ("close", 1.5), ("push", 1.5))

    def __init__(
        self,
        rng: random.Random,
        *,
        upstream: str,
        devices: Sequence[str],
        first_pr_number: int = 1,
        max_open: int = 12,
    ) -> None:
        self.rng = rng
        self.upstream = upstream
        self.devices = list(devices)
        self.next_number = first_pr_number
        self.max_open = max_open
        self.open_prs: dict[int, OpenPr] = {}
        self.main_sha = self._sha()

    def pause_before_next(self, events_per_minute: float) -> float:
        """Seconds until the next event: arrivals are a Poisson process at the given rate."""
        return self.rng.expovariate(events_per_minute / 60.0)

    def next_event(self) -> UpstreamEvent:
        """Pick what happens next upstream and return its webhook."""
        kind = self._choose_kind()
        if kind == "open":
            return self.open_pr()
        if kind == "push":
            return self._push()
        pr = self.rng.choice(list(self.open_prs.values()))
        if kind == "synchronize":
            return self._synchronize(pr)
        if kind == "label":
            return self._label(pr)
        return self._close(pr)

    def open_pr(self) -> UpstreamEvent:
        """A new pull request (the demo starts with one, so results come quickly)."""
        pr = OpenPr(
            number=self.next_number,
            head_sha=self._sha(),
            title=self.rng.choice(_TITLES),
            author=self.rng.choice(_AUTHORS),
        )
        self.next_number += 1
        self.open_prs[pr.number] = pr
        return UpstreamEvent(
            "pull_request", self._pr_payload("opened", pr), f"PR #{pr.number} opened"
        )

    def _choose_kind(self) -> str:
        if not self.open_prs:
            return "open"
        if len(self.open_prs) >= self.max_open:
            return "close"
        kinds = [kind for kind, _ in self.WEIGHTS if kind != "label" or self._labelable()]
        weights = [weight for kind, weight in self.WEIGHTS if kind in kinds]
        return self.rng.choices(kinds, weights=weights)[0]

    def _labelable(self) -> bool:
        return any(self._missing_devices(pr) for pr in self.open_prs.values())

    def _missing_devices(self, pr: OpenPr) -> list[str]:
        return [d for d in self.devices if f"{LABEL_PREFIX}{d}" not in pr.labels]

    def _synchronize(self, pr: OpenPr) -> UpstreamEvent:
        before, pr.head_sha = pr.head_sha, self._sha()
        payload = self._pr_payload("synchronize", pr, before=before)
        return UpstreamEvent("pull_request", payload, f"PR #{pr.number} updated")

    def _label(self, pr: OpenPr) -> UpstreamEvent:
        candidates = [p for p in self.open_prs.values() if self._missing_devices(p)]
        pr = pr if pr in candidates else self.rng.choice(candidates)
        name = LABEL_PREFIX + self.rng.choice(self._missing_devices(pr))
        payload = self._pr_payload("labeled", pr, label_name=name)
        pr.labels.append(name)
        return UpstreamEvent("pull_request", payload, f"PR #{pr.number} labelled {name}")

    def _close(self, pr: OpenPr) -> UpstreamEvent:
        del self.open_prs[pr.number]
        merged = self.rng.random() < 0.7
        payload = self._pr_payload("closed", pr, merged=merged)
        return UpstreamEvent(
            "pull_request", payload, f"PR #{pr.number} {'merged' if merged else 'closed'}"
        )

    def _push(self) -> UpstreamEvent:
        before, self.main_sha = self.main_sha, self._sha()
        payload = branch_push("main", repo=self.upstream, before=before, after=self.main_sha)
        return UpstreamEvent("push", payload, f"push to main ({self.main_sha[:7]})")

    def _pr_payload(self, action: str, pr: OpenPr, **extra: Any) -> dict[str, Any]:
        return pull_request_event(
            action,
            repo=self.upstream,
            number=pr.number,
            head_sha=pr.head_sha,
            head_ref=f"{pr.author}/change-{pr.number}",
            author=pr.author,
            title=pr.title,
            labels=list(pr.labels),
            **extra,
        )

    def _sha(self) -> str:
        return f"{self.rng.getrandbits(160):040x}"
