"""The words of a level-change pull request (SPEC §10.1): branch, title, label and body.

Pure, so that `sync` can tell whether an open pull request already says what it should:
it is refreshed only when the rendered title or body differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crcr.relay.allowlist.model import Level
from crcr.relay.levels.status import BackendStatus, Criterion

DEMOTION_LABEL = "crcr-auto-demotion"
PROMOTION_LABEL = "crcr-auto-promotion"

_CRITERIA_NAMES = {
    "job_pass_rate": "job pass rate",
    "timeout_rate": "timeout rate",
    "e2e_p50_hours": "end-to-end time P50",
    "overrun_rate": "overrun rate",
    "avg_queue_minutes": "average queue time",
    "days_at_l2": "time at L2",
}
_UNITS = {
    "job_pass_rate": "%",
    "timeout_rate": "%",
    "overrun_rate": "%",
    "e2e_p50_hours": " h",
    "avg_queue_minutes": " min",
    "days_at_l2": " days",
}


@dataclass(frozen=True)
class Proposal:
    """One level change to propose: which repo, from which level to which."""

    repo: str
    from_level: Level
    to_level: Level
    oncalls: tuple[str, ...]
    status: BackendStatus
    device: str | None = None  # the L3 device it moves under (its label)

    @property
    def demotion(self) -> bool:
        """Whether this lowers the level (else it is a promotion)."""
        return self.to_level < self.from_level

    @property
    def branch(self) -> str:
        """`crcr-demotion/<owner>/<repo>` or `crcr-promotion/<owner>/<repo>`."""
        return branch_for(self.repo, demotion=self.demotion)

    @property
    def label(self) -> str:
        """The label that marks the pull request as the relay's."""
        return DEMOTION_LABEL if self.demotion else PROMOTION_LABEL

    @property
    def title(self) -> str:
        """`[CRCR] Demote <owner/repo> from L3 to L2` (or Promote)."""
        verb = "Demote" if self.demotion else "Promote"
        return f"[CRCR] {verb} {self.repo} from {self.from_level} to {self.to_level}"

    @property
    def commit_message(self) -> str:
        """The allowlist commit's message."""
        return f"{self.title.removeprefix('[CRCR] ')}\n\nProposed by crcr levels sync."

    def body(self) -> str:
        """The criteria table with measured values, and the oncalls @-mentioned."""
        status = self.status
        if self.demotion:
            intro = (
                f"`{self.repo}` no longer meets the {self.from_level} criteria over the last "
                f"{status.window_days} days, so crcr treats its new jobs as {self.to_level} "
                "until they are met again (temporary demotion). Merging this pull request "
                "makes the change permanent; if the backend recovers first, crcr closes it."
            )
        else:
            intro = (
                f"`{self.repo}` has met every promotion criterion over the last "
                f"{status.window_days} days. Merging this pull request moves it to "
                f"{self.to_level}."
            )
        if self.to_level == Level.L3 and self.device:
            intro += (
                f" At L3 it is under the device `{self.device}`: its check runs come to pull"
                f" requests labelled `ciflow/crcr/{self.device}`, and do not block."
            )
        lines = [intro, "", *criteria_table(status.criteria), ""]
        return "\n".join([*lines, *pull_request_footer(self.oncalls)]) + "\n"


def pull_request_footer(oncalls: Sequence[str]) -> list[str]:
    """The last lines of every level pull request crcr opens: who to ask, who opened it."""
    if oncalls:
        mention = "Oncalls: " + ", ".join(f"@{login}" for login in oncalls)
    else:
        mention = "The allowlist names no oncalls for this backend."
    return [mention, "", "_Opened by crcr (`crcr levels sync`); merging is left to people._"]


def branch_for(repo: str, *, demotion: bool) -> str:
    """The pull request's branch for `repo` (one per repo and direction)."""
    kind = "demotion" if demotion else "promotion"
    return f"crcr-{kind}/{repo}"


def criteria_table(criteria: Sequence[Criterion]) -> list[str]:
    """A Markdown table: criterion, measured, target, met."""
    rows = ["| criterion | measured | target | met |", "|---|---|---|---|"]
    for criterion in criteria:
        name = _CRITERIA_NAMES.get(criterion.criterion, criterion.criterion)
        met = {True: "✅ yes", False: "❌ no", None: "—"}[criterion.met]
        rows.append(f"| {name} | {_measured(criterion)} | {criterion.target} | {met} |")
    return rows


def _measured(criterion: Criterion) -> str:
    if criterion.measured is None:
        return "no data"
    unit = _UNITS.get(criterion.criterion, "")
    value = criterion.measured
    return f"{value:.4g}{unit}"
