"""`CRCR_OIDC_ISSUERS`: which token issuers the callback endpoint trusts (SPEC §2).

Read from the environment as `crcr serve` reads it: inline JSON or a path to a YAML or
JSON file. A bad entry stops start-up with one line naming the variable and the entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crcr.config.settings import GITHUB_ACTIONS_ISSUER, OidcIssuer, SettingsError, load_settings

BUILDKITE = "https://agent.buildkite.com"
GHES = "https://ghe.example.com/_services/token"
ORG_ID = "0190a1b2-7c1e-7d3a-9f00-3a1d2e4f5a60"
PIPELINE_ID = "0190a1b2-7c1e-7d3a-9f00-5b6c7d8e9f01"
ACTIONS_ENTRY = {"issuer": GITHUB_ACTIONS_ISSUER, "kind": "github"}
BUILDKITE_ENTRY = {
    "issuer": BUILDKITE,
    "kind": "buildkite",
    "repo_map": {
        f"{ORG_ID}/{PIPELINE_ID}": {"repo": "acme/npu", "required_claims": {"build_branch": "main"}}
    },
}
YAML_FILE = f"""
- issuer: {GITHUB_ACTIONS_ISSUER}
  kind: github
- issuer: {BUILDKITE}
  kind: buildkite
  repo_map:
    {ORG_ID}/{PIPELINE_ID}:
      repo: acme/npu
      required_claims: {{build_branch: main}}
"""


@pytest.fixture(autouse=True)
def no_issuers_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRCR_OIDC_ISSUERS", raising=False)


def issuers_from(value: str, monkeypatch: pytest.MonkeyPatch) -> list[OidcIssuer]:
    monkeypatch.setenv("CRCR_OIDC_ISSUERS", value)
    return load_settings().oidc_issuers


def refusal(value: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """The one-line start-up error for `value` (a JSON document, or text as it is)."""
    text = value if isinstance(value, str) else json.dumps(value)
    with pytest.raises(SettingsError) as caught:
        issuers_from(text, monkeypatch)
    message = str(caught.value)
    assert message.startswith("CRCR_OIDC_ISSUERS: ")
    assert "\n" not in message
    return message.removeprefix("CRCR_OIDC_ISSUERS: ")


def test_the_default_trusts_github_actions_alone() -> None:
    assert load_settings().oidc_issuers == [
        OidcIssuer(issuer="https://token.actions.githubusercontent.com", kind="github")
    ]


def test_inline_json_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    actions, buildkite = issuers_from(json.dumps([ACTIONS_ENTRY, BUILDKITE_ENTRY]), monkeypatch)

    assert (actions.issuer, actions.kind, actions.repo_map) == (GITHUB_ACTIONS_ISSUER, "github", {})
    assert actions.jwks_endpoint == f"{GITHUB_ACTIONS_ISSUER}/.well-known/jwks"
    pipeline = buildkite.repo_map[f"{ORG_ID}/{PIPELINE_ID}"]
    assert (pipeline.repo, pipeline.required_claims) == ("acme/npu", {"build_branch": ("main",)})


def test_a_required_claim_may_list_the_values_it_accepts_as_the_reference_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "issuers.yaml"
    path.write_text(
        YAML_FILE.replace("{build_branch: main}", "{build_branch: [main, release/2.6]}")
    )

    [_, buildkite] = issuers_from(str(path), monkeypatch)

    required = buildkite.repo_map[f"{ORG_ID}/{PIPELINE_ID}"].required_claims
    assert required == {"build_branch": ("main", "release/2.6")}


@pytest.mark.parametrize("name", ["issuers.yaml", "issuers.yml", "issuers.json"])
def test_a_yaml_or_json_file_is_read(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / name
    entries = [ACTIONS_ENTRY, BUILDKITE_ENTRY]
    path.write_text(YAML_FILE if name.endswith((".yaml", ".yml")) else json.dumps(entries))

    issuers = issuers_from(str(path), monkeypatch)

    assert issuers == [OidcIssuer.model_validate(entry) for entry in entries]


def test_a_short_repo_map_entry_names_just_the_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    short = {**BUILDKITE_ENTRY, "repo_map": {f"{ORG_ID}/{PIPELINE_ID}": "acme/npu"}}

    [buildkite] = issuers_from(json.dumps([short]), monkeypatch)

    assert buildkite.repo_map[f"{ORG_ID}/{PIPELINE_ID}"].repo == "acme/npu"
    assert buildkite.repo_map[f"{ORG_ID}/{PIPELINE_ID}"].required_claims == {}


def test_repo_map_keys_are_kept_in_lower_case(monkeypatch: pytest.MonkeyPatch) -> None:
    shouting = {**BUILDKITE_ENTRY, "repo_map": {f"{ORG_ID}/{PIPELINE_ID}".upper(): "acme/npu"}}

    [buildkite] = issuers_from(json.dumps([shouting]), monkeypatch)

    assert list(buildkite.repo_map) == [f"{ORG_ID}/{PIPELINE_ID}"]


def _pipeline_requiring(value: Any) -> dict[str, Any]:
    pipeline = {"repo": "acme/npu", "required_claims": {"build_branch": value}}
    return {**BUILDKITE_ENTRY, "repo_map": {f"{ORG_ID}/{PIPELINE_ID}": pipeline}}


INVALID: dict[str, tuple[Any, str]] = {
    "a required claim accepting no value": (
        [_pipeline_requiring([])],
        f"entry 0 ({BUILDKITE}): repo_map.{ORG_ID}/{PIPELINE_ID}.required_claims: "
        "required_claims.build_branch must be a non-empty string or a non-empty list",
    ),
    "a required claim that is a number": (
        [_pipeline_requiring(["main", 7])],
        f"entry 0 ({BUILDKITE}): repo_map.{ORG_ID}/{PIPELINE_ID}.required_claims.build_branch.1",
    ),
    "a buildkite issuer without a repo_map": (
        [ACTIONS_ENTRY, {"issuer": BUILDKITE, "kind": "buildkite"}],
        f"entry 1 ({BUILDKITE}): a buildkite issuer needs a non-empty repo_map",
    ),
    "a buildkite issuer with an empty repo_map": (
        [{**BUILDKITE_ENTRY, "repo_map": {}}],
        f"entry 0 ({BUILDKITE}): a buildkite issuer needs a non-empty repo_map",
    ),
    "a repo_map on a github issuer": (
        [{**ACTIONS_ENTRY, "repo_map": BUILDKITE_ENTRY["repo_map"]}],
        f"entry 0 ({GITHUB_ACTIONS_ISSUER}): repo_map is for buildkite issuers",
    ),
    "a repo_map keyed by slugs": (
        [{**BUILDKITE_ENTRY, "repo_map": {"acme/npu-ci": "acme/npu"}}],
        f"entry 0 ({BUILDKITE}): repo_map: repo_map key 'acme/npu-ci' is not "
        "<organization_id>/<pipeline_id>",
    ),
    "an issuer ending in a slash": (
        [{"issuer": f"{GITHUB_ACTIONS_ISSUER}/", "kind": "github"}],
        f"entry 0 ({GITHUB_ACTIONS_ISSUER}/): issuer: issuer must not end with '/'",
    ),
    "the same issuer twice": (
        [BUILDKITE_ENTRY, ACTIONS_ENTRY, {**BUILDKITE_ENTRY}],
        f"entry 2 ({BUILDKITE}): duplicates entry 0",
    ),
    "two github issuers": (
        [ACTIONS_ENTRY, BUILDKITE_ENTRY, {"issuer": GHES, "kind": "github"}],
        f"entry 2 ({GHES}): only one github issuer is allowed (entry 0 is one)",
    ),
    "an unknown kind": (
        [{"issuer": "https://gitlab.example.com", "kind": "gitlab"}],
        "entry 0 (https://gitlab.example.com): kind: Input should be 'github' or 'buildkite'",
    ),
    "an entry without an issuer": ([{"kind": "github"}], "entry 0: issuer: Field required"),
    "one issuer rather than a list": (ACTIONS_ENTRY, "must be a non-empty list of issuers"),
    "no issuer at all": ([], "must be a non-empty list of issuers"),
    "broken JSON": ('[{"issuer": ', "is not valid JSON"),
    "a path that is not a file": ("/nonexistent/issuers.yaml", "is neither JSON nor a readable"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_an_invalid_setting_is_refused_naming_the_variable_and_the_entry(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    value, expected = INVALID[case]

    assert refusal(value, monkeypatch).startswith(expected)


def test_a_broken_yaml_file_is_refused_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "issuers.yaml"
    path.write_text("- issuer: https://a.example\n  kind: [github\n")

    assert refusal(str(path), monkeypatch) == f"{path} is not valid YAML at line 3"


def test_crcr_serve_stops_with_one_line_naming_the_entry(tmp_path: Path) -> None:
    environment = {
        name: value for name, value in os.environ.items() if not name.startswith("CRCR_")
    }
    issuers = json.dumps([ACTIONS_ENTRY, {"issuer": BUILDKITE, "kind": "buildkite"}])

    result = subprocess.run(
        [sys.executable, "-m", "crcr", "serve"],
        capture_output=True,
        text=True,
        env={**environment, "CRCR_OIDC_ISSUERS": issuers},
        timeout=60,
        check=False,
    )

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"crcr: CRCR_OIDC_ISSUERS: entry 1 ({BUILDKITE}): "
        "a buildkite issuer needs a non-empty repo_map"
    ]
