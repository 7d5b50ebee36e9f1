"""Sandbox GitHub routes for check runs, check suites, workflow re-runs and Actions jobs."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from crcr.sandbox.github_checks import build_check_run, select_check_runs, suite_id_for
from crcr.sandbox.github_http import (
    answer,
    api_base,
    authorised_repo,
    github_of,
    json_body,
    paginate,
)
from crcr.sandbox.github_model import ACTIVE_RUN_STATUSES, ApiError, Rerun


async def create_check_run(request: Request) -> Response:
    """`POST /repos/{o}/{r}/check-runs`: 201 with the run, in the App's suite for the SHA."""
    repo = authorised_repo(request)
    body = await json_body(request)
    github = github_of(request)
    with github.lock:
        run = build_check_run(
            repo=repo,
            body=body,
            run_id=github.next_id(),
            app=github.app,
            now=github.clock(),
            api_base=api_base(request),
        )
        head_sha = run["head_sha"]
        run["check_suite"] = {"id": suite_id_for(repo, head_sha, github.next_id())}
        repo.commits.setdefault(head_sha, {"message": "", "timestamp": github.clock()})
        repo.check_runs.append(run)
    return answer(run, status=201)


def _listing(request: Request, runs: list[dict[str, object]]) -> Response:
    page, headers = paginate(request, select_check_runs(runs, request.query_params))
    total = len(select_check_runs(runs, request.query_params))
    return answer({"total_count": total, "check_runs": page}, headers=headers)


async def list_suite_check_runs(request: Request) -> Response:
    """`GET /repos/{o}/{r}/check-suites/{id}/check-runs`."""
    repo = authorised_repo(request)
    suite_id: int = request.path_params["suite_id"]
    if suite_id not in repo.check_suites.values():
        raise ApiError(404, "Not Found")
    with github_of(request).lock:
        runs = [run for run in repo.check_runs if run["check_suite"]["id"] == suite_id]
    return _listing(request, runs)


async def list_ref_check_runs(request: Request) -> Response:
    """`GET /repos/{o}/{r}/commits/{ref}/check-runs` (ref given as a SHA)."""
    repo = authorised_repo(request)
    ref = request.path_params["ref"].lower()
    with github_of(request).lock:
        runs = [run for run in repo.check_runs if run["head_sha"] == ref]
    return _listing(request, runs)


async def _rerun(request: Request, kind: str) -> Response:
    repo = authorised_repo(request)
    github = github_of(request)
    run_id: int = request.path_params["run_id"]
    with github.lock:
        run = repo.workflow_runs.get(run_id)
        if run is None:
            raise ApiError(404, "Not Found")
        if run.status in ACTIVE_RUN_STATUSES:
            # GitHub refuses re-runs of a live run with this 403 (not a 409).
            raise ApiError(403, "This workflow is already running")
        run.status, run.conclusion = "queued", None
        run.run_attempt += 1
    github.record_rerun(Rerun(repo.full_name, run_id, kind, github.clock()))
    return answer({}, status=201)


async def rerun_workflow(request: Request) -> Response:
    """`POST /repos/{o}/{r}/actions/runs/{id}/rerun`."""
    return await _rerun(request, "rerun")


async def rerun_failed_jobs(request: Request) -> Response:
    """`POST /repos/{o}/{r}/actions/runs/{id}/rerun-failed-jobs`."""
    return await _rerun(request, "rerun-failed-jobs")


async def get_actions_job(request: Request) -> Response:
    """`GET /repos/{o}/{r}/actions/jobs/{id}`: the job as GitHub knows it (404: not here)."""
    repo = authorised_repo(request)
    job = github_of(request).jobs.get(repo.full_name, request.path_params["job_id"])
    if job is None:
        raise ApiError(404, "Not Found")
    return answer(job.as_json(api_base(request)))


ROUTES = [
    Route("/repos/{owner}/{repo}/check-runs", create_check_run, methods=["POST"]),
    Route(
        "/repos/{owner}/{repo}/check-suites/{suite_id:int}/check-runs",
        list_suite_check_runs,
        methods=["GET"],
    ),
    Route("/repos/{owner}/{repo}/commits/{ref}/check-runs", list_ref_check_runs, methods=["GET"]),
    Route(
        "/repos/{owner}/{repo}/actions/runs/{run_id:int}/rerun", rerun_workflow, methods=["POST"]
    ),
    Route(
        "/repos/{owner}/{repo}/actions/runs/{run_id:int}/rerun-failed-jobs",
        rerun_failed_jobs,
        methods=["POST"],
    ),
    Route("/repos/{owner}/{repo}/actions/jobs/{job_id:int}", get_actions_job, methods=["GET"]),
]
