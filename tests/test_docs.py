"""The docs keep up with the code: settings, commands, metrics and links they name exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from crcr import cli as crcr_cli
from crcr.config.settings import Settings
from crcr.init.workflow import TEMPLATES

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
OPERATOR_GUIDE = DOCS / "operator-guide.md"
ONBOARDING = DOCS / "downstream-onboarding.md"
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCED_CODE = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)
METRIC_DEFINITION = re.compile(r"\b(Counter|Gauge|Histogram|Summary)\(\s*\"(crcr_\w+)\"")


def command_paths(command: Any, prefix: str = "") -> list[str]:
    """Every runnable command under `command`, as typed after `crcr`.

    Typer builds its commands on a click of its own, so groups are recognised by their
    `commands` mapping rather than by class.
    """
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        return [prefix]
    paths = []
    for name, sub in sorted(subcommands.items()):
        paths += command_paths(sub, f"{prefix} {name}".strip())
    return paths


def exposed_name(kind: str, name: str) -> str:
    """The name Prometheus scrapes: prometheus_client suffixes counters with `_total`."""
    if kind == "Counter" and not name.endswith("_total"):
        return f"{name}_total"
    return name


def prose(markdown: str) -> str:
    """The document without its fenced code blocks (whose `#` and `](` mean nothing)."""
    return FENCED_CODE.sub("", markdown)


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a document's headings."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", prose(markdown), flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("field", sorted(Settings.model_fields))
def test_every_setting_is_in_the_operator_guide(field: str) -> None:
    assert f"`CRCR_{field.upper()}`" in OPERATOR_GUIDE.read_text()


def test_every_command_is_in_the_operator_guide() -> None:
    crcr_cli._register_component_commands()
    paths = command_paths(typer.main.get_command(crcr_cli.app))
    guide = OPERATOR_GUIDE.read_text()

    assert {"serve", "sweep", "allowlist check", "hud migrate", "init downstream"} <= set(paths)
    missing = [path for path in paths if f"`crcr {path}" not in guide]
    assert not missing, f"commands the operator guide does not mention: {missing}"


def test_every_metric_is_in_the_operator_guide() -> None:
    defined = {
        exposed_name(kind, name)
        for source in (ROOT / "src" / "crcr").rglob("*.py")
        for kind, name in METRIC_DEFINITION.findall(source.read_text())
    }
    guide = OPERATOR_GUIDE.read_text()

    assert "crcr_callbacks_total" in defined
    missing = sorted(name for name in defined if f"`{name}`" not in guide)
    assert not missing, f"metrics the operator guide does not list: {missing}"


def test_every_template_is_in_the_onboarding_guide() -> None:
    guide = ONBOARDING.read_text()
    for template in TEMPLATES:
        assert f"(../src/crcr/init/templates/{template}.yml)" in guide


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda page: page.name)
def test_every_relative_link_points_to_an_existing_file(page: Path) -> None:
    broken = []
    for target in MARKDOWN_LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto: … are not checked offline
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (
            anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked.read_text())
        ):
            broken.append(target)
    assert not broken, f"{page.name} links to what does not exist: {broken}"
