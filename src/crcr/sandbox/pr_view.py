"""The sandbox's page for a pull request: what github.com would show of crcr's work on it.

Sandbox pull requests exist nowhere else, so links to them (the HUD's, the demo's, the
`html_url` the sandbox answers) lead here instead of to a dead github.com page: the
PR's labels, the check runs on each head it had (newest first, as GitHub lists the
latest run of each name), and its comments. Plain HTML, no script, escaped throughout:
check-run text comes from downstream CI.
"""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Route

from crcr.sandbox.github_checks import select_check_runs
from crcr.sandbox.github_http import WEB_PATH
from crcr.sandbox.github_state import SandboxGitHub

STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
    "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ccc;"
    "padding:.3rem;text-align:left}.label{border:1px solid #999;border-radius:1rem;"
    "padding:0 .5rem;margin-right:.3rem}.mono{font-family:monospace}"
)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{STYLE}</style></head><body>{body}</body></html>"
    )
    return HTMLResponse(html, status_code=status)


def _check_runs(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return "<p>No check runs on this commit.</p>"
    rows = "".join(
        f"<tr><td>{escape(run['name'])}</td><td>{escape(run['status'])}</td>"
        f"<td>{escape(run.get('conclusion') or '—')}</td>"
        f"<td>{escape((run.get('output') or {}).get('title') or '')}</td></tr>"
        for run in runs
    )
    return (
        "<table><thead><tr><th>check run</th><th>status</th><th>conclusion</th>"
        f"<th>title</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def render_pull(github: SandboxGitHub, full_name: str, number: int) -> HTMLResponse:
    """The page of pull request `number` of `full_name`, or a 404 page saying why not."""
    pulls = github.pulls(full_name) if github.has_repo(full_name) else []
    pull = next((p for p in pulls if p["number"] == number), None)
    title = f"{full_name}#{number}"
    if pull is None:
        body = (
            f"<h1>{escape(title)}</h1><p>The sandbox has not seen this pull request "
            "(its webhook was not sent through the demo or <code>crcr sandbox webhook</code>)."
        )
        return _page(title, body, status=404)
    all_runs = github.check_runs(full_name)
    heads = list(reversed(pull.get("heads") or [pull["head_sha"]]))
    sections = []
    for index, sha in enumerate(heads):
        runs = select_check_runs([r for r in all_runs if r["head_sha"] == sha], {})
        caption = "head" if index == 0 else "earlier head"
        sections.append(
            f'<h3>{caption} <span class="mono">{escape(sha[:12])}</span></h3>{_check_runs(runs)}'
        )
    labels = "".join(
        f'<span class="label">{escape(label["name"])}</span>' for label in pull["labels"]
    )
    comments = "".join(
        f"<li><b>{escape(comment['user']['login'])}</b><pre>{escape(comment['body'])}</pre></li>"
        for comment in github.comments(full_name, number)
    )
    body = (
        f"<h1>{escape(pull['title'])} <small>{escape(title)}</small></h1>"
        f"<p>{escape(pull['state'])} · served by the crcr sandbox, not GitHub</p>"
        f"<h2>Labels</h2><p>{labels or 'none'}</p>"
        f"<h2>Check runs</h2>{''.join(sections)}"
        f"<h2>Comments</h2>{f'<ul>{comments}</ul>' if comments else '<p>none</p>'}"
    )
    return _page(title, body)


def remember_pull_request(github: SandboxGitHub, payload: dict[str, Any]) -> None:
    """Record the PR a `pull_request` webhook (sent from outside the sandbox) describes,
    so its page shows it; other payloads change nothing."""
    pull = payload.get("pull_request")
    if not isinstance(pull, dict) or payload.get("action") == "closed":
        return
    github.record_pull_head(
        pull["base"]["repo"]["full_name"],
        pull["number"],
        head_sha=pull["head"]["sha"],
        labels=tuple(label["name"] for label in pull.get("labels", ())),
        title=pull.get("title", ""),
    )


def pr_view_routes(github: SandboxGitHub) -> list[BaseRoute]:
    """`GET /web/OWNER/REPO/pull/N` (HEAD too: Starlette adds it to GET routes)."""

    async def view(request: Request) -> HTMLResponse:
        params = request.path_params
        return render_pull(github, f"{params['owner']}/{params['repo']}", params["number"])

    return [Route(f"{WEB_PATH}/{{owner}}/{{repo}}/pull/{{number:int}}", view)]
