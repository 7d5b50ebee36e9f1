"""Confirmed conclusions (SPEC §11), pure: GitHub's word on a job against the job's own.

A job reports its conclusion from one of its own steps, so a broken or dishonest
workflow can report `success` for a job that failed. For GitHub Actions the relay asks
GitHub's jobs API afterwards; the answer goes to the HUD as `trusted.confirmed` and
`trusted.confirmation`, and a contradicted success turns an L3/L4 check run red.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crcr.relay.checks.check_runs import check_conclusion


@dataclass(frozen=True)
class Confirmation:
    """GitHub's conclusion for a job and whether it agrees with the reported one."""

    github_conclusion: str | None
    confirmed: bool | None

    @property
    def contradicts_success(self) -> bool:
        """The job said `success` and GitHub says otherwise: what turns a check red."""
        return self.confirmed is False and self.github_conclusion != "success"


def confirm(reported: str | None, github_job: Mapping[str, Any]) -> Confirmation | None:
    """Judge a finished job; None while GitHub still has it running (ask again later).

    Both sides are compared as check-run conclusions, so aliases a CI system uses
    (`failed`, `canceled`) agree with GitHub's spelling. GitHub answering without a
    conclusion leaves it unknown (`confirmed` None), never a contradiction.
    """
    if github_job.get("status") != "completed":
        return None
    conclusion = github_job.get("conclusion")
    if not isinstance(conclusion, str) or not conclusion:
        return Confirmation(None, None)
    agrees = check_conclusion(conclusion) == check_conclusion(reported)
    return Confirmation(conclusion, agrees)


def confirmed_body(
    hud_body: Mapping[str, Any], confirmation: Confirmation, *, checked_at: str
) -> dict[str, Any]:
    """The update body for the job's HUD row: the same row, with the confirmation added.

    Everything else is the completed body the HUD already has, so the update can only
    add what it carries (the HUD keeps fields a later body lacks).
    """
    trusted = dict(hud_body.get("trusted") or {})
    if confirmation.confirmed is not None:
        trusted["confirmed"] = confirmation.confirmed
    trusted["confirmation"] = {
        "github_conclusion": confirmation.github_conclusion,
        "checked_at": checked_at,
    }
    return {**hud_body, "trusted": trusted}
