"""Injected misbehaviour for the sandbox GitHub: latency, error statuses, hangs, Retry-After."""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FaultRule:
    """What to do to calls matching `method`, `path` (a glob) and `repo`.

    `times` is how many matching calls the rule shapes before it retires (None = all).
    A call is handled `hang` seconds after it arrived (a call held on its way in, or one
    meant to outlast a client's timeout) and answered `latency` seconds after that, its
    work done in the meantime; when `status` is set, with that status, `body`,
    `headers` and `Retry-After` instead of GitHub's normal answer.
    """

    path: str = "*"
    method: str | None = None
    repo: str | None = None
    status: int | None = None
    times: int | None = None
    latency: float = 0.0
    hang: float = 0.0
    retry_after: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    applied: int = 0

    def matches(self, method: str, path: str, repo: str | None) -> bool:
        """Whether this rule applies to the call."""
        if self.method is not None and self.method.upper() != method:
            return False
        if self.repo is not None and (repo or "").lower() != self.repo.lower():
            return False
        return fnmatch.fnmatchcase(path, self.path)

    @property
    def exhausted(self) -> bool:
        """Whether the rule has shaped as many calls as it was asked to."""
        return self.times is not None and self.applied >= self.times

    def response_headers(self) -> dict[str, str]:
        """Headers of the injected answer."""
        headers = dict(self.headers)
        if self.retry_after is not None:
            headers["retry-after"] = str(self.retry_after)
        return headers

    def response_body(self) -> Any:
        """Body of the injected answer: the given one, or GitHub's error shape."""
        if self.body is not None:
            return self.body
        return {"message": "Injected fault", "documentation_url": "https://docs.github.com/rest"}


@dataclass(frozen=True)
class FaultDecision:
    """What the sandbox does to one call: hang this long before handling it, answer it
    `latency` seconds after that, maybe with this rule's status instead of GitHub's."""

    latency: float
    hang: float
    answer: FaultRule | None

    @property
    def delay(self) -> float:
        """How long after its arrival the call is answered."""
        return self.latency + self.hang


class FaultPlan:
    """The ordered, thread-safe list of active rules; the first rule with a status answers."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def add(self, rule: FaultRule) -> FaultRule:
        """Activate a rule (after those already active)."""
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        """Deactivate every rule."""
        with self._lock:
            self._rules.clear()

    def decide(self, method: str, path: str, repo: str | None) -> FaultDecision:
        """Consume one use of every matching rule and say what happens to the call.

        Latencies add up across matching rules; the first matching rule with a status
        answers the call. Exhausted rules retire, so "502 three times, then normal" works.
        """
        latency = hang = 0.0
        answer: FaultRule | None = None
        with self._lock:
            for rule in self._rules:
                if not rule.matches(method, path, repo):
                    continue
                if rule.status is not None and answer is not None:
                    continue
                rule.applied += 1
                latency += rule.latency
                hang += rule.hang
                if rule.status is not None:
                    answer = rule
            self._rules = [rule for rule in self._rules if not rule.exhausted]
        return FaultDecision(latency=latency, hang=hang, answer=answer)
