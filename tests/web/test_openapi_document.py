"""The OpenAPI documents tell the truth: every route and status, held to by fuzzing.

Schemathesis generates requests from the relay's and the HUD's `/openapi.json` and sends
them to the apps in process: no answer may be a 5xx, and every answer must be one the
document lists, in the shape it gives. The number of examples is bounded so that the
whole module stays near a minute.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from tests.relay.callback_harness import sandbox_github_client

from crcr.app import create_app
from crcr.config.settings import Settings, load_settings
from crcr.hud.component import create_hud_app
from crcr.relay.openapi_operations import CALLBACK_ERRORS, WEBHOOK_ERRORS
from crcr.runtime import Runtime, open_runtime
from crcr.sandbox.github_state import SandboxGitHub
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.web.openapi_document import RESULTS_ERRORS

HUD_TOKEN = "fuzzing-hud-token"
EXAMPLES = 8
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


def relay_app(data_dir: Path) -> FastAPI:
    """The relay with its in-process HUD, its GitHub the sandbox."""
    sandbox = SandboxGitHub()
    sandbox.install_app("pytorch/pytorch", "org/backend")
    allowlist = data_dir / "allowlist.yaml"
    allowlist.parent.mkdir(parents=True, exist_ok=True)
    allowlist.write_text("L2:\n  - org/backend\n")
    relay_settings = load_settings(
        webhook_secret="fuzzing-webhook-secret",
        github_app_id=str(sandbox.app.app_id),
        github_app_private_key=sandbox.app.private_key_pem,
        github_api_url="http://github.sandbox",
        allowlist=str(allowlist),
        data_dir=data_dir,
        hud_token=HUD_TOKEN,
        public_docs=True,
    )

    async def runtime(s: Settings) -> Runtime:
        store = await SqliteStateStore.open(s.state_database_path)
        return await open_runtime(s, store=store, github=sandbox_github_client(sandbox, store))

    return create_app(relay_settings, runtime=runtime, background=False)


# Built at import: schemathesis parametrizes tests from a schema it has when collecting
# (its fixture-based loader does not work with pytest 9). The data lives in a temporary
# directory removed at exit.
_DATA = tempfile.TemporaryDirectory(prefix="crcr-fuzz-")
relay = schemathesis.openapi.from_asgi("/openapi.json", relay_app(Path(_DATA.name) / "relay"))
hud = schemathesis.openapi.from_asgi(
    "/openapi.json",
    create_hud_app(
        load_settings(data_dir=Path(_DATA.name) / "hud", hud_token=HUD_TOKEN, public_docs=True)
    ),
)


def call_and_validate(case: Any) -> None:
    # The HUD's ingestion is fuzzed past its token check too: that is where bodies are read.
    # Every check runs, "a schema-valid request is accepted" and "a schema-violating one
    # refused" included: the documents say exactly what the routes take (issue 33 item
    # 24). A callback is answered 401 before its body is read, as the fuzzer holds no
    # token; its body's schema is pydantic's own, which is what checks it.
    case.call_and_validate(headers={"x-hud-internal-bot": HUD_TOKEN})


@relay.parametrize()
@FUZZ
def test_the_relay_answers_as_its_document_says(case: Any) -> None:
    call_and_validate(case)


@hud.parametrize()
@FUZZ
def test_the_hud_answers_as_its_document_says(case: Any) -> None:
    call_and_validate(case)


def test_the_callback_and_webhook_are_documented_with_every_status() -> None:
    paths = relay.raw_schema["paths"]
    for path, errors in (
        ("/github/callback", CALLBACK_ERRORS),
        ("/github/callback/", CALLBACK_ERRORS),
        ("/github/webhook", WEBHOOK_ERRORS),
        ("/api/crcr/results", RESULTS_ERRORS),
    ):
        operation = paths[path]["post"]
        assert "requestBody" in operation, path
        assert {str(status) for status in errors} <= set(operation["responses"]), path
    assert {"200", "202"} <= set(paths["/github/callback"]["post"]["responses"])


def test_what_the_routes_refuse_the_document_does_not_offer() -> None:
    # Issue 33 item 24: each of these was schema-valid, then refused.
    relay_paths = relay.raw_schema["paths"]
    headers = {p["name"]: p["schema"] for p in relay_paths["/github/webhook"]["post"]["parameters"]}
    assert headers["X-Hub-Signature-256"]["pattern"] == "^sha256=[0-9a-f]{64}$"
    assert all(schema.get("pattern") for schema in headers.values())
    workflow = relay.raw_schema["components"]["schemas"]["Workflow"]
    assert workflow["properties"]["run_id"]["minLength"] == 1
    body = hud.raw_schema["paths"]["/api/crcr/results"]["post"]["requestBody"]
    results = body["content"]["application/json"]["schema"]
    callback = results["properties"]["untrusted"]["properties"]["callback_payload"]
    assert {"delivery_id", "workflow"} <= set(callback["required"])
    assert {"status", "name", "run_id"} <= set(callback["properties"]["workflow"]["required"])
