"""What a check run says beyond the job's own report (SPEC §11), as values (pure).

The failed tests' names, a link to the PR on the HUD, the HUD's baseline verdict, the
L4 flake re-run, and GitHub contradicting a reported conclusion: each adds a line to
the summary, and the last two can change the check run's conclusion.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from crcr.relay.checks.github_text import code

SHOWN_FAILED_TESTS = 5
BASELINE_WORDS = {
    "new": "new: this job passes on the upstream's default branch",
    "already_failing": "already failing on the upstream's default branch",
    "flaky": "flaky: a later attempt on this commit passed",
    "unknown": "no baseline result to compare with",
}


class FlakeCheck(StrEnum):
    """Where an L4 job's automatic confirmation re-run stands."""

    RERUNNING = "rerunning"  # the first attempt failed; a re-run was asked for
    FAILED_TWICE = "failed_twice"
    FLAKY = "flaky"  # failed, then passed on the re-run
    UNCONFIRMED = "unconfirmed"  # failed; the re-run never reported, so the failure stands


@dataclass(frozen=True)
class CheckNotes:
    """Everything besides the job's report that shapes its check run."""

    hud_pr_url: str | None = None
    baseline: str | None = None
    flake: FlakeCheck | None = None
    github_conclusion: str | None = None
    """GitHub's own conclusion for the job, when it contradicts a reported success."""


def noted_conclusion(conclusion: str | None, notes: CheckNotes) -> str | None:
    """The check run's conclusion once the notes are taken into account (None: in progress).

    A reported success that GitHub contradicts is a failure: an L4 check is blocking,
    and a job's word about itself must not outweigh GitHub's record of it.
    """
    if notes.flake is FlakeCheck.RERUNNING and conclusion == "failure":
        return None
    if conclusion == "success" and notes.github_conclusion not in (None, "success"):
        return "failure"
    return conclusion


def noted_title(conclusion: str | None, notes: CheckNotes) -> str | None:
    """A title replacing the plain one, or None to keep it."""
    if notes.flake is FlakeCheck.RERUNNING and conclusion is None:
        return "Re-running to confirm"
    if notes.flake is FlakeCheck.FLAKY and conclusion == "success":
        return "Success (flaky)"
    return None


def note_lines(
    notes: CheckNotes,
    *,
    reported: str | None,
    failed_tests: tuple[str, ...],
    failed_total: int,
) -> list[str]:
    """The summary's extra paragraphs, in reading order."""
    lines: list[str] = []
    if notes.flake is FlakeCheck.RERUNNING:
        lines.append("The job failed; the relay is re-running it once to confirm the failure.")
    elif notes.flake is FlakeCheck.FAILED_TWICE:
        lines.append("The job failed twice: on its first attempt and on the confirming re-run.")
    elif notes.flake is FlakeCheck.FLAKY:
        lines.append("The job passed on re-run (flaky): its first attempt failed.")
    elif notes.flake is FlakeCheck.UNCONFIRMED:
        lines.append(
            "The job failed, and the re-run asked for to confirm it never reported: "
            "the failure stands."
        )
    if notes.github_conclusion not in (None, "success") and reported == "success":
        lines.append(
            f"The downstream reported `success`, but GitHub records the job's conclusion "
            f"as {code(notes.github_conclusion or '')}."
        )
    if failed_tests:
        shown = ", ".join(code(name) for name in failed_tests[:SHOWN_FAILED_TESTS])
        more = failed_total - min(len(failed_tests), SHOWN_FAILED_TESTS)
        tail = f" and {more} more" if more > 0 else ""
        lines.append(f"Failed tests: {shown}{tail}.")
    if notes.baseline in BASELINE_WORDS:
        lines.append(f"Baseline: {BASELINE_WORDS[str(notes.baseline)]}.")
    if notes.hud_pr_url:
        lines.append(f"[This pull request on the HUD]({notes.hud_pr_url})")
    return lines


def hud_pr_url(hud_public_url: str | None, pr_number: int | None) -> str | None:
    """The HUD's page of a pull request, when the HUD's public address is configured."""
    if not hud_public_url or not pr_number:
        return None
    return f"{hud_public_url}/crcr/pr/{pr_number}"
