"""The governance layer as an upstream lives it: a model-based test (SPEC §10.2).

Hypothesis drives the real relay app over the sandbox GitHub through the events of a
pull request's life — pushes, the device label, the PR closing, downstream jobs starting,
passing, failing, timing out and being re-run, L4 confirmation re-runs, backends demoted
and restored, demotions declined, overrides set and cleared, level syncs opening demotion
pull requests, those pull requests merged, backends removed from the allowlist, the
relay restarting, sweeper passes and hours passing beyond the zombie timeout — in any
order, and checks what an upstream must be able to trust:

- every check run whose job has ended is concluded (a blocking L4 check always ends),
  and none outlives its job by more than the zombie timeout and a sweep;
- a check run's conclusion is its job's latest result, and the HUD's row agrees;
- one oncall comment per (pull request, backend), listing each failing job once and
  only jobs that still fail;
- a level pull request moves an entry whole (its oncalls, events and token pins kept),
  merged ones included, and is open only for a backend still listed one level above.

`make test` runs a few examples on each state store (`CRCR_GOVERNANCE_EXAMPLES`, 10 by
default); `make soak-governance` runs thousands. Against the code before issue 29's
fixes it found the blocking check that never ends within 400 examples, shrunk to three
steps: an L4 job fails, its backend is demoted, the confirming re-run fails; after them,
a green check kept over a re-run that timed out under an override
(`tests/relay/governance/test_re_runs_replace_their_check.py`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select
from tests.relay.callback_harness import StoreOpener, opener, signing_key
from tests.relay.checks_harness import (
    DEVICE_LABEL,
    L2_REPO,
    L3_REPO,
    L4_REPO,
    PR_NUMBER,
    UPSTREAM,
    World,
    installed_sandbox,
    open_world,
    sandbox_app,
)
from tests.relay.governance.steps import ALLOWLIST_PATH, BLOB_URL, merge_allowlist, run_job

from crcr.cli.levels import sync_levels
from crcr.hud.models import JOBS
from crcr.relay.allowlist.model import (
    Allowlist,
    AllowlistEntry,
    Level,
    TokenConstraints,
    parse_allowlist,
)
from crcr.relay.checks.oncall_comments import oncall_marker
from crcr.relay.checks.open_checks import RECHECK, WATCH_SLACK
from crcr.relay.levels.demotion import Demotion
from crcr.relay.levels.governance import DEMOTION_BRANCH
from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_state import SandboxGitHub
from crcr.sandbox.oidc_issuer import SigningKey
from crcr.sandbox.webhooks import pull_request_event
from crcr.sandbox.webhooks.objects import stable_id

__all__ = ["opener", "sandbox_app", "signing_key"]  # the fixtures, re-used

BACKENDS = {L3_REPO: Level.L3, L4_REPO: Level.L4}
JOB_NAMES = ("test", "build")
FAILING = frozenset({"failure", "timed_out"})
EXAMPLES = int(os.environ.get("CRCR_GOVERNANCE_EXAMPLES", "10"))
STEPS = int(os.environ.get("CRCR_GOVERNANCE_STEPS", "25"))
_ROW = re.compile(r"^\| `([^`]+)` \| (\w+) \|", re.MULTILINE)
PINS = {
    repo: TokenConstraints(
        str(stable_id(repo)), f"{repo}/.github/workflows/crcr.yml@*", "refs/heads/main"
    )
    for repo in BACKENDS
}
ONCALLS = {L3_REPO: ("xpu-oncall",), L4_REPO: ("oncall1", "oncall2")}
# The upstream's allowlist: entries in the mapping form, pinned, commented — what a level
# pull request must keep.
UPSTREAM_ALLOWLIST = f"""\
# Backends of {UPSTREAM}, reviewed by the CI team.
L2:
  - {L2_REPO}
L3:
  xpu:
    {L3_REPO}:   # Intel's runners; the pins bind its tokens
      oncalls: [xpu-oncall]
      repository_id: {PINS[L3_REPO].repository_id}
      workflow: "{PINS[L3_REPO].workflow}"
      ref: {PINS[L3_REPO].ref}
L4:
  - {L4_REPO}:
      oncalls: [oncall1, oncall2]
      repository_id: {PINS[L4_REPO].repository_id}
      workflow: "{PINS[L4_REPO].workflow}"
      ref: {PINS[L4_REPO].ref}
"""


@dataclass
class JobModel:
    """What the downstream reported of one job on one head: its attempts' results."""

    run_id: int
    attempt: int = 1
    running: bool = False
    results: dict[int, str] = field(default_factory=dict)  # attempt → conclusion
    re_runs_answered: int = 0  # re-runs the relay asked GitHub for that have reported

    @property
    def latest(self) -> str | None:
        """The latest attempt's conclusion, None while it has none."""
        return self.results.get(self.attempt)

    @property
    def last_result(self) -> str | None:
        """The newest conclusion reported, whatever attempt is running now."""
        return self.results[max(self.results)] if self.results else None


STEPS_TAKEN: Counter[str] = Counter()  # rule → times it ran, in this test


def counted(step: Callable[..., None]) -> Callable[..., None]:
    """A rule that counts its runs: the test prints them, and a soak fails on one unrun."""
    STEPS_TAKEN[step.__name__] = 0

    @functools.wraps(step)
    def counted_step(*args: Any, **kwargs: Any) -> None:
        STEPS_TAKEN[step.__name__] += 1
        step(*args, **kwargs)

    return counted_step


def check_name(repo: str, job: str) -> str:
    return f"crcr/{repo}/ci/{job}"


class Governance(RuleBasedStateMachine):
    """One pull request, two blocking-capable backends, and the relay between them."""

    def __init__(self, place: Place) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.place = place
        self.exits = AsyncExitStack()
        self.world: World = self.runner.run(self._open())
        self.heads: list[str] = []
        self.deliveries: dict[str, str] = {}  # head → the pull_request delivery of it
        self.jobs: dict[tuple[str, str, str], JobModel] = {}  # (head, repo, job)
        self.next_run_id = 5000
        self.labelled = False
        self.closed = False
        self.removed: set[str] = set()  # backends taken off the allowlist
        self.overridden: set[str] = set()  # backends an override was set for
        self.settled = False
        self.run(self._push("opened"))

    async def _open(self) -> World:
        world: World = await self.exits.enter_async_context(self.place.world())
        return world

    def run(self, work: Any) -> Any:
        return self.runner.run(work)

    def teardown(self) -> None:
        try:
            self.run(self.exits.aclose())
        finally:
            self.runner.close()

    @property
    def head(self) -> str:
        return self.heads[-1]

    async def _push(self, action: str) -> None:
        sha = uuid.uuid4().hex + "0" * 8
        self.heads.append(sha)
        labels = (DEVICE_LABEL,) if self.labelled else ()
        self.deliveries[sha] = await self.world.pull_request(action, labels=labels, sha=sha)

    def _job(self, repo: str, job: str) -> JobModel:
        key = (self.head, repo, job)
        if key not in self.jobs:
            self.next_run_id += 1
            self.jobs[key] = JobModel(self.next_run_id)
        return self.jobs[key]

    async def _report(
        self,
        repo: str,
        job: str,
        model: JobModel,
        conclusion: str | None,
        *,
        head: str | None = None,
    ) -> None:
        status = "in_progress" if conclusion is None else "completed"
        if conclusion is not None:
            # GitHub's own record of the run, for the L4 re-run and confirmed conclusions.
            self.world.sandbox.add_workflow_run(
                repo, model.run_id, status="completed", conclusion=conclusion
            )
        response = await self.world.report(
            repo,
            self.deliveries[head or self.head],
            status,
            conclusion,
            job=job,
            run_id=model.run_id,
            run_attempt=model.attempt,
        )
        assert response.status_code == 200, response.text

    # --- the events -----------------------------------------------------------------

    @precondition(lambda self: not self.closed)
    @rule()
    @counted
    def synchronize(self) -> None:
        """A new head: the older head's jobs still running are superseded (SPEC §15)."""
        older = self.head
        self.run(self._push("synchronize"))
        self.run(self.world.settle())
        for (head, repo, job), model in self.jobs.items():
            if head == older and model.running and self._superseded(repo, job, head):
                model.running = False
                model.results[model.attempt] = "cancelled"
        self.settled = False

    def _superseded(self, repo: str, job: str, head: str) -> bool:
        """Whether the HUD shows the job's latest attempt superseded: which running jobs
        the relay finds is its own business (it knows those it keeps summaries of)."""
        hud = self.world.runtime.hud
        assert hud is not None
        query = (
            select(JOBS.c.superseded_by)
            .where(JOBS.c.downstream_repo == repo, JOBS.c.job_name == job)
            .where(JOBS.c.head_sha == head)
            .order_by(JOBS.c.run_attempt.desc(), JOBS.c.id.desc())
        )
        with hud.engine.connect() as connection:
            return connection.execute(query).scalars().first() is not None

    @precondition(lambda self: not self.labelled and not self.closed)
    @rule()
    @counted
    def label_the_device(self) -> None:
        self.labelled = True
        self.run(self.world.label(DEVICE_LABEL, sha=self.head))
        self.settled = False

    def _pairs(self, wanted: Callable[[JobModel | None], bool]) -> list[tuple[str, str]]:
        """The (backend, job) pairs on the current head whose job is as `wanted`."""
        return [
            (repo, job)
            for repo in sorted(set(BACKENDS) - self.removed)
            for job in JOB_NAMES
            if wanted(self.jobs.get((self.head, repo, job)))
        ]

    @precondition(lambda self: self._pairs(lambda m: m is None))
    @rule(data=st.data())
    @counted
    def job_starts(self, data: st.DataObject) -> None:
        repo, job = data.draw(st.sampled_from(self._pairs(lambda m: m is None)))
        model = self._job(repo, job)
        self.run(self._report(repo, job, model, None))
        model.running = True
        self.settled = False

    @precondition(lambda self: self._pairs(lambda m: m is None))
    @rule(data=st.data(), conclusion=st.sampled_from(["success", "failure", "timed_out"]))
    @counted
    def job_runs(self, data: st.DataObject, conclusion: str) -> None:
        """A job starts and ends between two other events (the common case, so that jobs
        outnumber the rarer governance events as they do upstream)."""
        repo, job = data.draw(st.sampled_from(self._pairs(lambda m: m is None)))
        model = self._job(repo, job)
        for reported in (None, conclusion):
            self.run(self._report(repo, job, model, reported))
        model.results[model.attempt] = conclusion
        self.settled = False

    @precondition(lambda self: self._pairs(lambda m: m is not None and m.running))
    @rule(data=st.data(), conclusion=st.sampled_from(["success", "failure", "timed_out"]))
    @counted
    def job_ends(self, data: st.DataObject, conclusion: str) -> None:
        running = self._pairs(lambda m: m is not None and m.running)
        repo, job = data.draw(st.sampled_from(running))
        model = self._job(repo, job)
        self.run(self._report(repo, job, model, conclusion))
        model.running = False
        model.results[model.attempt] = conclusion
        self.settled = False

    @precondition(lambda self: self._pairs(lambda m: m is not None and not m.running))
    @rule(data=st.data())
    @counted
    def job_re_run(self, data: st.DataObject) -> None:
        """A new attempt of an ended job (someone pressed re-run, or the relay's L4 re-run)."""
        ended = self._pairs(lambda m: m is not None and not m.running)
        repo, job = data.draw(st.sampled_from(ended))
        model = self._new_attempt(self.head, repo, job)
        self.run(self._report(repo, job, model, None))
        model.running = True
        self.settled = False

    def _awaiting_listed(self) -> list[tuple[str, str, str]]:
        return sorted(
            key
            for key in self.jobs
            if key[1] not in self.removed and self._awaiting_confirmation(*key)
        )

    @precondition(lambda self: self._awaiting_listed())
    @rule(data=st.data(), conclusion=st.sampled_from(["success", "failure"]))
    @counted
    def confirmation_re_run_reports(self, data: st.DataObject, conclusion: str) -> None:
        """GitHub re-ran a failed L4 job at the relay's request; the re-run reports."""
        awaiting = self._awaiting_listed()
        head, repo, job = data.draw(st.sampled_from(awaiting))
        model = self._new_attempt(head, repo, job)
        for reported in (None, conclusion):
            self.run(self._report(repo, job, model, reported, head=head))
        model.results[model.attempt] = conclusion
        self.settled = False

    @rule(repo=st.sampled_from(sorted(BACKENDS)))
    @counted
    def backend_demoted(self, repo: str) -> None:
        level = self._allowlist().level_of(repo)
        if level is None or level < Level.L3:
            return  # only L3 and L4 are demoted (refused, tested in tests/relay/levels)
        demotion = Demotion(repo, datetime.now(UTC), level)
        self.run(self.world.runtime.store.add_demotion(repo, demotion.to_store()))
        self.settled = False

    def _demoted(self) -> list[str]:
        book = self.world.runtime.demotions
        assert book is not None
        book.forget()
        return sorted(self.run(book.current()))

    @precondition(lambda self: self._demoted())
    @rule(data=st.data())
    @counted
    def backend_restored(self, data: st.DataObject) -> None:
        repo = data.draw(st.sampled_from(self._demoted()))
        self.run(self.world.runtime.store.remove_demotion(repo))
        self.settled = False

    @precondition(lambda self: self._demotion_pulls())
    @rule(data=st.data())
    @counted
    def demotion_declined(self, data: st.DataObject) -> None:
        """A maintainer closes a demotion pull request unmerged: GitHub says so."""
        pull = data.draw(st.sampled_from(self._demotion_pulls()))
        self.world.sandbox.close_pull(UPSTREAM, pull["number"])
        closed = pull_request_event(
            "closed", repo=UPSTREAM, number=pull["number"], head_ref=pull["head"]
        )
        assert self.run(self.world.webhook("pull_request", closed)).status_code == 200
        self.settled = False

    @rule(repo=st.sampled_from(sorted(BACKENDS)), level=st.sampled_from([Level.L2, Level.L3]))
    @counted
    def override_set(self, repo: str, level: Level) -> None:
        allowlist = self._allowlist()
        if level >= (allowlist.level_of(repo) or Level.L1):
            return  # an override only lowers (refused, tested in tests/relay/levels)
        governance = self.world.runtime.governance
        assert governance is not None
        self.run(
            governance.set_override(allowlist, repo, level, timedelta(days=3), "model", "oncall")
        )
        self.overridden.add(repo)
        self.settled = False

    @precondition(lambda self: self.overridden)
    @rule(data=st.data())
    @counted
    def override_cleared(self, data: st.DataObject) -> None:
        repo = data.draw(st.sampled_from(sorted(self.overridden)))
        self.overridden.discard(repo)
        governance = self.world.runtime.governance
        assert governance is not None
        self.run(governance.clear_override(repo, "oncall"))
        self.settled = False

    # --- the allowlist and its level pull requests ----------------------------------

    def _allowlist(self) -> Allowlist:
        allowlist: Allowlist = self.run(self.world.runtime.allowlist())
        return allowlist

    def _text(self, branch: str | None = None) -> str:
        """The allowlist file on `branch` (default: the upstream's default branch)."""
        return self.world.sandbox.file_text(UPSTREAM, ALLOWLIST_PATH, branch) or ""

    def _demotion_pulls(self) -> list[dict[str, Any]]:
        pulls = self.world.sandbox.pulls(UPSTREAM, state="open")
        return [pull for pull in pulls if pull["head"].startswith(DEMOTION_BRANCH)]

    def _mergeable(self) -> list[dict[str, Any]]:
        """Open demotion pull requests GitHub would merge cleanly: every other entry as
        the default branch has it (a stale one waits for the sync to refresh it)."""
        listed = parse_allowlist(self._text())
        mergeable = []
        for pull in self._demotion_pulls():
            repo = pull["head"].removeprefix(DEMOTION_BRANCH)
            proposed = parse_allowlist(self._text(pull["head"]))
            if listed.entry(repo) is not None and others(proposed, repo) == others(listed, repo):
                mergeable.append(pull)
        return mergeable

    @rule(repo=st.sampled_from(sorted(BACKENDS)))
    @counted
    def backend_fails_elsewhere(self, repo: str) -> None:
        """Two of the backend's jobs fail on another pull request: its level criteria may
        no longer hold, and the next sync proposes its demotion."""
        if repo in self.removed:
            return
        other = pull_request_event(
            "opened", repo=UPSTREAM, number=PR_NUMBER + 1, head_sha=uuid.uuid4().hex + "1" * 8
        )
        delivery = str(uuid.uuid4())
        assert self.run(self.world.webhook("pull_request", other, delivery)).status_code == 200
        for _ in range(2):
            self.next_run_id += 1
            self.run(
                run_job(self.world, repo, delivery, "failure", run_id=self.next_run_id, job="e2e")
            )
        self.settled = False

    @rule()
    @counted
    def levels_synced(self) -> None:
        """The leader's `crcr levels sync`: demotions refreshed from the verdicts, their
        pull requests opened, refreshed or closed."""
        self.run(sync_levels(self.world.runtime, promotions=False, device=None))
        listed = parse_allowlist(self._text())
        for pull in self._demotion_pulls():
            repo = pull["head"].removeprefix(DEMOTION_BRANCH)
            entry, proposed = listed.entry(repo), parse_allowlist(self._text(pull["head"]))
            assert entry is not None, f"a demotion pull request for {repo}, no longer listed"
            assert proposed.level_of(repo) == entry.level - 1, (repo, entry.level)
        self.settled = False

    @precondition(lambda self: self._mergeable())
    @rule(data=st.data())
    @counted
    def demotion_pull_request_merged(self, data: st.DataObject) -> None:
        """A maintainer merges a demotion pull request: the allowlist changes on main."""
        pull = data.draw(st.sampled_from(self._mergeable()))
        self.world.sandbox.merge_pull(UPSTREAM, pull["number"], by="maintainer")
        merged = pull_request_event(
            "closed",
            repo=UPSTREAM,
            number=pull["number"],
            head_ref=pull["head"],
            author="maintainer",
            merged=True,
        )
        assert self.run(self.world.webhook("pull_request", merged)).status_code == 200
        self.run(merge_allowlist(self.world, self._text()))
        self.settled = False

    @precondition(lambda self: len(self.removed) < len(BACKENDS))
    @rule(data=st.data())
    @counted
    def backend_removed(self, data: st.DataObject) -> None:
        """The backend's entry is deleted from the allowlist on main (revocation)."""
        repo = data.draw(st.sampled_from(sorted(set(BACKENDS) - self.removed)))
        self.run(merge_allowlist(self.world, without_entry(self._text(), repo)))
        self.removed.add(repo)
        self.settled = False

    @precondition(lambda self: self._removed_running())
    @rule(data=st.data(), conclusion=st.sampled_from(["success", "failure"]))
    @counted
    def removed_backends_job_reports(self, data: st.DataObject, conclusion: str) -> None:
        """A job of a removed backend reports: accepted as ignored, nothing changes."""
        head, repo, job = data.draw(st.sampled_from(self._removed_running()))
        model = self.jobs[head, repo, job]
        answer = self.run(
            self.world.report(
                repo,
                self.deliveries[head],
                "completed",
                conclusion,
                job=job,
                run_id=model.run_id,
                run_attempt=model.attempt,
            )
        )
        assert answer.json() == {"status": "ignored"}, answer.text

    def _removed_running(self) -> list[tuple[str, str, str]]:
        return sorted(key for key, m in self.jobs.items() if key[1] in self.removed and m.running)

    @precondition(lambda self: not self.closed)
    @rule(merged=st.booleans())
    @counted
    def pull_request_closed(self, merged: bool) -> None:
        """Merged or abandoned; jobs already running still report."""
        self.closed = True
        payload = pull_request_event(
            "closed", repo=UPSTREAM, number=PR_NUMBER, head_sha=self.head, merged=merged
        )
        response = self.run(self.world.webhook("pull_request", payload))
        assert response.status_code == 200, response.text
        self.settled = False

    @rule()
    @counted
    def relay_restarted(self) -> None:
        """The instance stops and another starts on the same store, HUD and GitHub."""
        self.run(self.exits.aclose())
        self.exits = AsyncExitStack()
        self.world = self.run(self._open())
        self.settled = False

    @precondition(
        lambda self: (
            any(m.running for m in self.jobs.values())
            or any(self._awaiting_confirmation(*key) for key in self.jobs)
        )
    )
    @rule()
    @counted
    def hours_pass(self) -> None:
        """Past `CRCR_ZOMBIE_TIMEOUT`: the sweeper times out every job still running and
        gives up on every confirming re-run that never came (the failure stands)."""
        zombie_timeout = self.world.runtime.settings.zombie_timeout
        for ahead in (zombie_timeout + WATCH_SLACK + 60, 2 * RECHECK):
            self.place.clock.ahead += ahead
            self.run(self.world.settle())
        for key, model in self.jobs.items():
            if model.running:
                model.running = False
                model.results[model.attempt] = "timed_out"
            elif self._awaiting_confirmation(*key):
                model.re_runs_answered += 1
        self.settled = True

    @rule()
    @counted
    def sweeper_pass(self) -> None:
        self.run(self.world.settle())
        self.settled = True

    # --- what must hold ---------------------------------------------------------------

    def _awaiting_confirmation(self, head: str, repo: str, job: str) -> bool:
        """A failed L4 job the relay asked GitHub to re-run, whose re-run has not started."""
        model = self.jobs.get((head, repo, job))
        if model is None or model.running or model.latest not in FAILING:
            return False
        asked = [r for r in self.world.sandbox.reruns(repo) if r.run_id == model.run_id]
        return len(asked) > model.re_runs_answered

    def _new_attempt(self, head: str, repo: str, job: str) -> JobModel:
        model = self.jobs[head, repo, job]
        if self._awaiting_confirmation(head, repo, job):
            model.re_runs_answered += 1
        model.attempt += 1
        return model

    def _latest_check_runs(self) -> dict[tuple[str, str], dict[str, Any]]:
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for run in self.world.check_runs():
            latest[run["name"], run["head_sha"]] = run
        return latest

    @invariant()
    def every_ended_job_has_a_concluded_check(self) -> None:
        for (head, repo, job), model in self.jobs.items():
            run = self._latest_check_runs().get((check_name(repo, job), head))
            if run is None or model.running or model.latest is None:
                continue
            if run["status"] != "completed":
                assert self._awaiting_confirmation(head, repo, job), (
                    f"{run['name']} on {head[:7]} is {run['status']} although its job "
                    f"ended {model.latest} (attempt {model.attempt})"
                )

    @invariant()
    def a_concluded_check_says_what_the_job_and_the_hud_say(self) -> None:
        latest = self._latest_check_runs()
        for (head, repo, job), model in self.jobs.items():
            run = latest.get((check_name(repo, job), head))
            if run is None or run["status"] != "completed" or model.running:
                continue
            assert run["conclusion"] == model.latest, (run["name"], run["output"]["title"])
            assert self._hud_conclusion(repo, job, head) == model.latest

    def _hud_conclusion(self, repo: str, job: str, head: str) -> str | None:
        hud = self.world.runtime.hud
        assert hud is not None
        query = (
            select(JOBS.c.conclusion)
            .where(JOBS.c.downstream_repo == repo, JOBS.c.job_name == job)
            .where(JOBS.c.head_sha == head)
            .order_by(JOBS.c.run_attempt.desc(), JOBS.c.id.desc())
        )
        with hud.engine.connect() as connection:
            return connection.execute(query).scalars().first()

    @invariant()
    def one_comment_per_backend_listing_only_what_fails(self) -> None:
        comments = self.world.comments()
        for repo in BACKENDS:
            mine = [c for c in comments if oncall_marker(repo) in c["body"]]
            assert len(mine) <= 1, f"{len(mine)} oncall comments for {repo}"
            if not mine or not self.settled:
                continue
            listed = [name for name, _ in _ROW.findall(mine[0]["body"])]
            assert len(listed) == len(set(listed)), f"a job listed twice: {listed}"
            for name in listed:
                job = name.rsplit("/", 1)[1]
                reported = [m for (h, r, j), m in self.jobs.items() if r == repo and j == job]
                assert any(m.last_result in FAILING for m in reported), (
                    f"the comment lists {name} as failing; its last results are "
                    f"{[m.last_result for m in reported]}"
                )

    @invariant()
    def level_pull_requests_and_merges_keep_every_entry_whole(self) -> None:
        listed = parse_allowlist(self._text())
        for entry in listed.entries:
            if entry.repo in BACKENDS:
                assert (entry.constraints, entry.oncalls) == (PINS[entry.repo], ONCALLS[entry.repo])
        for pull in self._demotion_pulls():
            repo = pull["head"].removeprefix(DEMOTION_BRANCH)
            before = listed.entry(repo)
            after = parse_allowlist(self._text(pull["head"])).entry(repo)
            assert after is not None, f"the pull request for {repo} drops its entry"
            if before is not None:
                assert replace(after, level=before.level, device=before.device) == before


def others(allowlist: Allowlist, repo: str) -> set[AllowlistEntry]:
    """Every entry but `repo`'s."""
    return {entry for entry in allowlist.entries if entry.repo.lower() != repo.lower()}


def without_entry(text: str, repo: str) -> str:
    """The allowlist text with `repo`'s entry (its line and the lines nested under it) cut."""
    lines = text.splitlines(keepends=True)
    (start,) = [i for i, line in enumerate(lines) if line.lstrip(" -").startswith(f"{repo}:")]
    depth = len(lines[start]) - len(lines[start].lstrip(" -"))
    end = start + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip(" ")) > depth:
        end += 1
    return "".join(lines[:start] + lines[end:])


class RelayClock:
    """The relay's time for jobs: now, or as far ahead as the model has moved it."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


@dataclass
class Place:
    """Where one example's relay lives: its store, GitHub, data and clock, kept across
    restarts."""

    store: StoreOpener
    sandbox: SandboxGitHub
    work_dir: Path
    key: SigningKey
    clock: RelayClock = field(default_factory=RelayClock)

    @asynccontextmanager
    async def world(self) -> AsyncIterator[World]:
        """A relay instance here, with level verdicts left to the rules, generous budgets."""
        opened = open_world(
            self.store, self.work_dir, self.sandbox, self.key, BLOB_URL, clock=self.clock
        )
        async with opened as world:
            world.runtime.sweeper.extra_steps.clear()
            world.checks.inline_budget = world.checks.backfill_budget = 30.0
            # The model is about what is decided, not how fast: a loaded machine (a soak
            # beside the suite) must not turn a callback into a 503 to retry.
            world.runtime.callback.check_budget = 30.0
            # Nor may a loaded machine cut a callback's hooks (check runs, comments) short:
            # what a cut hook leaves undone the sweeper redoes after the job's grace
            # (tests/relay/checks/test_publisher.py, a relay that died before the hooks).
            world.runtime.callback.hook_budget = 30.0
            if world.runtime.demotions is not None:
                world.runtime.demotions._cache_seconds = 0  # a demotion counts at once
            yield world


@pytest.fixture
def governance(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> Callable[[], Governance]:
    """A machine factory: each example on a fresh state store (Redis or SQLite) and sandbox."""

    def place() -> Place:
        fresh = uuid.uuid4().hex
        work_dir = tmp_path / fresh
        work_dir.mkdir()
        if opener.kind == "sqlite":
            store = StoreOpener("sqlite", work_dir / "state.db")
        else:  # a namespace inside the test's own, deleted with it
            store = StoreOpener("redis", work_dir, opener.redis_url, f"{opener.prefix}{fresh}:")
        sandbox = installed_sandbox(sandbox_app)
        sandbox.add_file(UPSTREAM, ALLOWLIST_PATH, UPSTREAM_ALLOWLIST)
        return Place(store, sandbox, work_dir, signing_key)

    return lambda: Governance(place())


def test_the_governance_layer_holds_whatever_an_upstream_lives_through(
    governance: Callable[[], Governance],
) -> None:
    for step in STEPS_TAKEN:  # from 0 on each store
        STEPS_TAKEN[step] = 0
    run_state_machine_as_test(
        governance,  # type: ignore[arg-type]  # a factory is accepted; the stub says a class
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    taken = " ".join(f"{step}={times}" for step, times in sorted(STEPS_TAKEN.items()))
    print(f"\n{EXAMPLES} examples, {len(STEPS_TAKEN)} rules, steps taken: {taken}")
    if EXAMPLES >= 100:  # a soak: every event an upstream lives through was lived
        assert min(STEPS_TAKEN.values()) > 0, STEPS_TAKEN
