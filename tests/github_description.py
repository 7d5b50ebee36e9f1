"""GitHub's published description (vendored from npm, see fixtures/github/regenerate.py).

`mismatches` holds calls recorded over the sandbox against it: every call must be a
documented operation (path template and method), its JSON body must validate against
the operation's request schema, and the sandbox's answer must carry a documented status
and validate against that status's response schema. Validation is `jsonschema`'s, over
the OpenAPI schemas with `nullable` already turned into JSON Schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from crcr.sandbox.call_log import CallRecord

FIXTURES = Path(__file__).parent / "fixtures" / "github"
BASE = "urn:github-openapi-subset"
# Where GitHub's description falls short of GitHub, with the reason: problems matching
# one of these patterns are not reported.
DESCRIPTION_QUIRKS = tuple(
    re.compile(pattern)
    for pattern in (
        # The list's inline schema wants `account` to be a user *and* an Enterprise
        # (allOf), while components/schemas/installation says one or the other (anyOf);
        # the sandbox answers a full user, as GitHub does.
        r"^GET /app/installations answer 200: \d+/account: ",
        # A re-run of a run still in progress: GitHub answers 403 "already running",
        # which its description does not list (the relay takes it as a no-op, SPEC §7).
        r"^POST /repos/[^/]+/[^/]+/actions/runs/\d+/rerun(-failed-jobs)?: status 403 ",
        # Bad credentials (401) and "not found, or not yours to see" (404) can be the
        # answer to any call; the description lists them for some operations only.
        r"^[A-Z]+ \S+: status (401|404) not documented",
        # A label without a description: GitHub answers null, as components/schemas/label
        # allows; the pull-request list's inline label schema says string only.
        r"^GET \S+/pulls answer 200: \d+/labels/\d+/description: None is not of type",
    )
)


@cache
def description() -> dict[str, Any]:
    """The vendored subset of `@octokit/openapi`."""
    loaded: dict[str, Any] = json.loads((FIXTURES / "openapi-subset.json").read_text())
    return loaded


@cache
def webhook_examples() -> dict[str, list[dict[str, Any]]]:
    """`@octokit/webhooks-examples`' payloads, by event name."""
    loaded: dict[str, list[dict[str, Any]]] = json.loads(
        (FIXTURES / "webhook-examples.json").read_text()
    )["examples"]
    return loaded


@cache
def _registry() -> Registry:
    resource: Resource[Any] = Resource.from_contents(
        description(), default_specification=DRAFT202012
    )
    return Registry().with_resource(BASE, resource)


def _pointer(*parts: str) -> str:
    return "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def schema_errors(instance: Any, *pointer: str) -> list[str]:
    """Where `instance` breaks the schema at `pointer` in the description (empty: valid)."""
    validator = Draft202012Validator(
        {"$ref": f"{BASE}#/{_pointer(*pointer)}"}, registry=_registry()
    )
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message[:200]}"
        for error in validator.iter_errors(instance)
    ]


@cache
def _templates() -> list[tuple[re.Pattern[str], str]]:
    """Path templates as patterns, the most literal first (`/git/refs` before `{path}`)."""
    found = []
    for template in description()["paths"]:
        pattern = re.sub(
            r"\{(\w+)\}",
            lambda m: "(.+)" if m.group(1) in ("path", "ref") else "([^/]+)",
            template,
        )
        found.append((re.compile(f"^{pattern}$"), template))
    return sorted(found, key=lambda entry: (entry[1].count("{"), -len(entry[1])))


def operation_of(method: str, path: str) -> str | None:
    """The documented path template serving `method path`, or None."""
    for pattern, template in _templates():
        if pattern.match(path) and method.lower() in description()["paths"][template]:
            return template
    return None


def mismatches(calls: Iterable[CallRecord]) -> list[str]:
    """Every way the recorded calls and answers differ from GitHub's description."""
    problems = []
    for call in calls:
        if call.faulted or call.status is None:
            continue  # an injected fault is the test's own answer, not the sandbox's
        template = operation_of(call.method, call.path)
        if template is None:
            problems.append(f"{call.call}: no such operation in GitHub's description")
            continue
        method = call.method.lower()
        operation = description()["paths"][template][method]
        where = ("paths", template, method)
        content = operation.get("requestBody", {}).get("content", {})
        if call.json is not None and "application/json" in content:
            for error in schema_errors(
                call.json, *where, "requestBody", "content", "application/json", "schema"
            ):
                problems.append(f"{call.call} request body: {error}")
        response = operation["responses"].get(str(call.status))
        if response is None:
            documented = sorted(operation["responses"])
            problems.append(f"{call.call}: status {call.status} not documented ({documented})")
            continue
        if "$ref" in response:
            name = response["$ref"].rsplit("/", 1)[-1]
            response = description()["components"]["responses"][name]
            where = ("components", "responses", name)
            shape: tuple[str, ...] = where
        else:
            shape = (*where, "responses", str(call.status))
        if call.answer is not None and "application/json" in response.get("content", {}):
            for error in schema_errors(
                call.answer, *shape, "content", "application/json", "schema"
            ):
                problems.append(f"{call.call} answer {call.status}: {error}")
    return [problem for problem in problems if not _quirk(problem)]


def _quirk(problem: str) -> bool:
    return any(pattern.match(problem) for pattern in DESCRIPTION_QUIRKS)
