"""Shaping query results for the pages, and the pages rendered from hand-built results."""

from __future__ import annotations

import re

from tests.hud.web import samples

from crcr.hud.reads.pr import PrBackendJobs, PrView
from crcr.hud.reads.summary import Summary, SummaryStats
from crcr.hud.web import render, views


def render_page(template: str, **context: object) -> str:
    return render.render(
        template, prefix="/crcr", upstream_repo="pytorch/pytorch", section="", **context
    )


def test_backends_are_grouped_l4_first_and_worst_pass_rate_first() -> None:
    rows = [
        samples.summary_row("a/healthy", "L2", 0.99),
        samples.summary_row("a/silent", "L2", None),
        samples.summary_row("a/flaky", "L2", 0.70),
        samples.summary_row("a/gate", "L4", 0.96),
        samples.summary_row("a/gone", None, 0.50),
    ]
    groups = views.group_by_level(rows)
    assert [g.level for g in groups] == ["L4", "L2", None]
    assert [r.repo for r in groups[1].rows] == ["a/flaky", "a/healthy", "a/silent"]
    assert groups[0].title == "Merge-gating"
    assert groups[2].title == "Not on the allowlist"


def test_matrix_headers_split_workflow_from_job() -> None:
    page = samples.backend_page(
        (samples.pr_row(1, "a" * 40, {"ci / test": samples.cell("ci / test", "success")}),),
        ("ci / test", "lint / ruff"),
    )
    headers = views.matrix_headers(page)
    assert [(h.workflow, h.job) for h in headers] == [("ci", "test"), ("lint", "ruff")]


def test_a_collapsed_shard_cell_says_it_is_the_worst_of_n() -> None:
    shard = samples.cell("ci / test", "failure", shard_count=4, queue_time=65.0)
    tip = views.cell_tooltip(shard)
    assert "ci / test: failure" in tip
    assert "worst of 4 shards" in tip
    assert "tests: 40 passed, 2 failed, 3 skipped" in tip
    assert "queue 1m 05s" in tip


def test_tests_text_is_a_dash_when_the_job_sent_no_counts() -> None:
    bare = samples.cell("ci / test", "success", passed=None, failed=None, skipped=None)
    assert views.tests_text(bare) == "—"


def test_pr_jobs_fold_earlier_attempts_under_the_latest() -> None:
    view = PrView(
        pr_number=7,
        head_shas=("a" * 40,),
        backends=(
            PrBackendJobs(
                repo="org/be",
                level="L3",
                jobs=(
                    samples.record("build", "success"),
                    samples.record("test", "failure", attempt=1),
                    samples.record("test", "success", attempt=2),
                    samples.record("lint", "failure"),
                ),
            ),
        ),
    )
    [backend] = views.pr_backends(view)
    assert [(j.latest.job_name, j.outcome) for j in backend.jobs] == [
        ("lint", "failure"),
        ("build", "success"),
        ("test", "success"),
    ]
    test_job = backend.jobs[2]
    assert test_job.latest.run_attempt == 2
    assert [e.run_attempt for e in test_job.earlier] == [1]
    assert dict(backend.tally) == {"failure": 1, "success": 2}


def test_the_summary_page_shows_pills_in_the_threshold_colours() -> None:
    backends = (
        samples.summary_row("org/green", "L4", 0.95),
        samples.summary_row("org/amber", "L3", 0.80),
        samples.summary_row("org/red", "L2", 0.79),
    )
    summary = Summary(
        window_days=7,
        event_type=None,
        days=samples.DAYS,
        stats=SummaryStats(runs=30, failures=3, backends=3, timed_out=0),
        backends=backends,
    )
    html = render_page(
        "summary.html",
        summary=summary,
        groups=views.group_by_level(backends),
        sparks={row.repo: views.trend_sparkline(row) for row in backends},
        failure_share="10.0% of jobs",
        event_label="",
        event_types=[(None, "All"), ("nightly", "Nightly")],
        window_href=lambda days: f"/crcr?window={days}",
        event_href=lambda key: f"/crcr?event={key}",
        backend_href=lambda repo: f"/crcr/{repo}",
    )
    for repo, tone in (("green", "good"), ("amber", "warn"), ("red", "bad")):
        row = re.search(rf'<tr data-repo="org/{repo}">.*?</tr>', html, re.S)
        assert row is not None
        assert f"rate tone-{tone}" in row.group(0)
    assert '<svg class="spark"' in html
    # No inline script: the one script is the theme's own static file.
    assert re.findall(r"<script[^>]*>", html) == [
        f'<script src="/crcr/static/theme.js?v={render.asset("theme.js")[1]}">'
    ]


def test_the_backend_page_marks_collapsed_shards_and_earlier_attempts() -> None:
    cells = {
        "ci / test": samples.cell(
            "ci / test",
            "failure",
            shard_count=3,
            run_attempt=2,
            earlier_attempts=(samples.attempt(1, "success"),),
        ),
    }
    page = samples.backend_page((samples.pr_row(42, "b" * 40, cells),), ("ci / test", "ci / lint"))
    html = render_page(
        "backend.html",
        page=page,
        headers=views.matrix_headers(page),
        legend=("success", "failure"),
        window_href=lambda days: f"?window={days}",
        event=None,
        event_types=[(None, "All")],
        event_href=lambda key: "",
        newer_href=None,
        older_href=None,
        pr_href=lambda n: f"/crcr/pr/{n}",
    )
    assert 'data-outcome="failure"' in html
    assert "\u00d73" in html  # the multiplication sign of "x3 shards"
    assert "↻ 1 earlier" in html
    assert 'href="/crcr/pr/42"' in html
    assert 'class="cell empty" data-column="ci / lint"' in html


def test_a_summary_without_backends_shows_an_intentional_empty_state() -> None:
    summary = Summary(7, None, samples.DAYS, SummaryStats(0, 0, 0, 0), ())
    html = render_page(
        "summary.html",
        summary=summary,
        groups=(),
        sparks={},
        failure_share="no jobs",
        event_label="",
        event_types=[(None, "All")],
        window_href=lambda days: "",
        event_href=lambda key: "",
        backend_href=lambda repo: "",
    )
    assert "No backends yet" in html


def test_the_pr_lead_line_counts_backends_still_running_and_folds_a_passed_retry() -> None:
    view = PrView(
        pr_number=7,
        head_shas=("a" * 40,),
        backends=(
            PrBackendJobs("org/slow", "L2", (samples.record("test", None),)),
            PrBackendJobs(
                "org/be",
                "L3",
                (
                    samples.record("lint", "success", attempt=2),
                    samples.record("lint", "failure", baseline="flaky"),
                ),
            ),
        ),
    )

    backends = views.pr_backends(view)
    line = views.pr_lead_line(backends)

    assert [job.baseline for b in backends for job in b.jobs] == [None, "flaky"]
    assert line.text == (
        "No backend fails (2 backends reported) · 1 flaky job passed on re-run "
        "· 1 job still running"
    )
