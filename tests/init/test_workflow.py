"""Rendering a template replaces its placeholders, and only with values safe in YAML."""

from __future__ import annotations

import pytest
import yaml

from crcr.init.workflow import (
    DEFAULT_ACTION,
    PLACEHOLDER_CALLBACK_URL,
    TEMPLATES,
    InitError,
    check_action,
    check_callback_url,
    render_workflow,
    template_text,
)


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_template_holds_the_values_rendering_replaces(template: str) -> None:
    text = template_text(template)

    assert text.count(PLACEHOLDER_CALLBACK_URL) == 1  # one place to edit by hand
    assert text.count(f"uses: {DEFAULT_ACTION}") >= 2  # in_progress and completed


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_rendered_template_is_the_template_with_the_given_values(template: str) -> None:
    rendered = render_workflow(
        template,
        action="./action/crcr-report",
        callback_url="http://127.0.0.1:8000/github/callback",
    )

    assert yaml.safe_load(rendered)["env"]["CRCR_CALLBACK_URL"] == (
        "http://127.0.0.1:8000/github/callback"
    )
    assert rendered.count("uses: ./action/crcr-report") == template_text(template).count(
        DEFAULT_ACTION
    )
    assert DEFAULT_ACTION not in rendered


@pytest.mark.parametrize(
    "ref", ["my-org/crcr/action/crcr-report@v1", "my-org/crcr/action/crcr-report@0a1b2c3", "./a/b"]
)
def test_action_references_github_accepts_are_accepted(ref: str) -> None:
    assert check_action(ref) == ref


@pytest.mark.parametrize(
    "ref", ["crcr-report", "my-org/crcr", "o/r@v1\n  run: curl evil", "o/r@'v1'", "../x"]
)
def test_action_references_that_are_not_one_are_refused(ref: str) -> None:
    with pytest.raises(InitError, match="--action must look like"):
        check_action(ref)


@pytest.mark.parametrize(
    "url", ["ftp://relay.example.org/cb", "https://relay.example.org/cb # x", "https://"]
)
def test_callback_urls_that_could_break_the_yaml_are_refused(url: str) -> None:
    with pytest.raises(InitError, match="--callback-url must be an http"):
        check_callback_url(url)
