"""Gather a check run's notes (`notes.CheckNotes`) from the store, the HUD and GitHub."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from crcr.relay.checks.check_runs import FAILING_CONCLUSIONS, CheckReport
from crcr.relay.checks.flake_rerun import FlakeRerun
from crcr.relay.checks.notes import CheckNotes, hud_pr_url, noted_conclusion
from crcr.relay.jobs.lifecycle import JobState
from crcr.stores.roles import Caches

log = logging.getLogger(__name__)

CONTRADICTIONS = "github-contradicts"
"""Cache namespace: job key → GitHub's conclusion, when it contradicted a reported success."""


class BaselineVerdicts(Protocol):
    """The in-process HUD's baseline verdicts (`crcr.hud.component.Hud`), SPEC §11.

    Keyed by (downstream repo, workflow name, job name); only failed jobs appear. With
    an external HUD there is none, and check runs go without the baseline line.
    """

    async def baseline_verdicts(
        self, pr_number: int, head_sha: str
    ) -> Mapping[tuple[str, str, str], str]:
        """Each failed job's verdict: new, already_failing, flaky or unknown."""


class NotesSource:
    """Everything a check run says beyond its job's report."""

    def __init__(
        self,
        store: Caches,
        flake: FlakeRerun,
        *,
        hud_public_url: str | None,
        baseline: BaselineVerdicts | None,
    ) -> None:
        self._store = store
        self.flake = flake
        self.hud_public_url = hud_public_url
        self._baseline = baseline

    async def notes_for(self, report: CheckReport, *, max_retries: int | None) -> CheckNotes:
        """The notes of one report's check run (asking for an L4 re-run if it is due)."""
        flake = await self.flake.check(report, max_retries=max_retries)
        contradiction = None
        if report.state is JobState.COMPLETED:
            contradiction = await self._store.cache_get(CONTRADICTIONS, report.job_key)
        notes = CheckNotes(
            hud_pr_url=hud_pr_url(self.hud_public_url, report.pr_number),
            flake=flake,
            github_conclusion=contradiction,
        )
        if noted_conclusion(report.check_conclusion, notes) in FAILING_CONCLUSIONS:
            notes = replace(notes, baseline=await self._baseline_of(report))
        return notes

    async def _baseline_of(self, report: CheckReport) -> str | None:
        """The HUD's verdict on this failed job; None without an in-process HUD or a PR."""
        if self._baseline is None or not report.pr_number:
            return None
        try:
            verdicts = await self._baseline.baseline_verdicts(report.pr_number, report.head_sha)
        except Exception as exc:  # the HUD's read failing must not cost the check run
            log.warning("baseline verdicts for PR %s unavailable: %s", report.pr_number, exc)
            return None
        wanted = (report.repo.lower(), report.workflow_name, report.job_name)
        for (repo, workflow, job), verdict in verdicts.items():
            if (repo.lower(), workflow, job) == wanted:
                return verdict
        return None
