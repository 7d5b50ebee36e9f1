"""How failure detail is shown: baseline marks, the PR page's lead line, the downstream's claim.

Pure functions over the `crcr.hud.reads` records, used by the templates. Every mark is
a symbol and words as well as a colour, so colour is never the only signal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crcr.failure_detail.triage_verdict import is_safe_log_url
from crcr.hud.baseline.verdicts import FAILED_CONCLUSIONS


@dataclass(frozen=True)
class Mark:
    """A baseline verdict as shown: symbol, short and long words, colour tone."""

    verdict: str
    symbol: str
    short: str
    long: str
    tone: str


MARKS = {
    "new": Mark("new", "▲", "new", "new failure: not seen on main", "bad"),
    "already_failing": Mark("already_failing", "≡", "on main", "already failing on main", "warn"),
    "flaky": Mark("flaky", "↻", "flaky", "flaky: passed on re-run", "running"),
    "unknown": Mark("unknown", "?", "no baseline", "no result from main to compare", "muted"),
}
SHOWN_TESTS = 5  # failed test names listed before the rest fold away


def mark(verdict: str | None) -> Mark | None:
    """The mark of a baseline verdict, or None for a job that has none."""
    return None if verdict is None else MARKS.get(verdict)


@dataclass(frozen=True)
class FailingJob:
    """What the lead line needs of one job on the PR page: its backend and verdict."""

    repo: str
    conclusion: str | None
    baseline: str | None


@dataclass(frozen=True)
class LeadLine:
    """The PR page's first line: what a reviewer should do, and its tone."""

    text: str
    tone: str


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _backend_verdict(verdicts: set[str | None]) -> str:
    """A backend with several failing jobs counts as its most actionable one."""
    for verdict in ("new", "unknown", "already_failing"):
        if verdict in verdicts:
            return verdict
    return "unknown"


def lead_line(jobs: Iterable[FailingJob], running: int = 0) -> LeadLine:
    """One line a reviewer can act on, e.g. "2 backends fail: 1 new failure (o/r), 1 …".

    `jobs` are the latest attempts of the PR's jobs (conclusion None while running); a
    flaky job passed on its re-run and is mentioned, not counted as failing.
    """
    failing: dict[str, set[str | None]] = {}
    flaky = 0
    backends: set[str] = set()
    for job in jobs:
        backends.add(job.repo)
        if job.conclusion in FAILED_CONCLUSIONS:
            failing.setdefault(job.repo, set()).add(job.baseline)
        elif job.baseline == "flaky":
            flaky += 1
    flaky_note = f" · {_plural(flaky, 'flaky job')} passed on re-run" if flaky else ""
    still = f" · {_plural(running, 'job')} still running" if running else ""
    if not failing:
        text = f"No backend fails ({_plural(len(backends), 'backend')} reported)"
        return LeadLine(text + flaky_note + still, "good" if not running else "running")
    groups: dict[str, list[str]] = {}
    for repo in sorted(failing):
        groups.setdefault(_backend_verdict(failing[repo]), []).append(repo)
    parts = []
    if new := groups.get("new"):
        parts.append(f"{_plural(len(new), 'new failure')} ({', '.join(new)})")
    if known := groups.get("already_failing"):
        parts.append(f"{len(known)} already failing on main ({', '.join(known)})")
    if unknown := groups.get("unknown"):
        parts.append(f"{len(unknown)} with no result from main to compare ({', '.join(unknown)})")
    verb = "fails" if len(failing) == 1 else "fail"
    text = f"{_plural(len(failing), 'backend')} {verb}: {', '.join(parts)}"
    return LeadLine(text + flaky_note + still, "bad" if "new" in groups else "warn")


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence a downstream cites; `log_url` only when safe to link."""

    label: str
    excerpt: str | None
    log_url: str | None


@dataclass(frozen=True)
class Claim:
    """A downstream's triage verdict as shown: its own words, never the HUD's finding."""

    category: str
    confidence: str
    summary: str
    suspects_this_pr: bool
    suspected: str | None
    evidence: tuple[Evidence, ...]
    analyzer: str | None


def _evidence(items: Sequence[Any]) -> tuple[Evidence, ...]:
    shown = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        url = item.get("log_url")
        label = " · ".join(str(item[k]) for k in ("job", "test") if item.get(k)) or "log"
        shown.append(
            Evidence(
                label=label,
                excerpt=item.get("excerpt") if isinstance(item.get("excerpt"), str) else None,
                # Checked again here: a stored verdict is only as safe as what wrote it.
                log_url=url if isinstance(url, str) and is_safe_log_url(url) else None,
            )
        )
    return tuple(shown)


def claim(verdict: Mapping[str, Any] | None, pr_number: int) -> Claim | None:
    """The verdict shaped for the page; "suspects this PR" when it names `pr_number`."""
    if not verdict:
        return None
    suspected = verdict.get("suspected_upstream")
    suspected = suspected if isinstance(suspected, Mapping) else {}
    named = []
    if isinstance(suspected.get("pr"), int):
        named.append(f"PR #{suspected['pr']}")
    if isinstance(suspected.get("commit"), str):
        named.append(f"commit {suspected['commit'][:12]}")
    analyzer = verdict.get("analyzer")
    analyzer_text = None
    if isinstance(analyzer, Mapping):
        analyzer_text = " ".join(str(analyzer[k]) for k in ("name", "version") if k in analyzer)
    evidence = verdict.get("evidence")
    return Claim(
        category=str(verdict.get("category", "unknown")),
        confidence=str(verdict.get("confidence", "low")),
        summary=str(verdict.get("summary", "")),
        suspects_this_pr=pr_number > 0 and suspected.get("pr") == pr_number,
        suspected=" and ".join(named) or None,
        evidence=_evidence(evidence if isinstance(evidence, list) else []),
        analyzer=analyzer_text or None,
    )


def confirmation_text(confirmed: bool | None, github_conclusion: str | None) -> str | None:
    """What GitHub said of the reported conclusion, in words; None when not checked."""
    if confirmed is None:
        return None
    if confirmed:
        return "confirmed by GitHub"
    said = (github_conclusion or "no conclusion").replace("_", " ")
    return f"contradicted: GitHub says {said}"
