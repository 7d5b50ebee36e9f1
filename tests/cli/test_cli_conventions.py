"""Every `crcr` command follows the conventions operators expect (SPEC §2).

`crcr --version`; each option backed by a setting reads its `CRCR_*` variable and
`--help` says which; the few options that are per-invocation choices, not settings, are
named here with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.core import TyperGroup, TyperOption
from typer.testing import CliRunner

from crcr import cli
from crcr.config.settings import Settings

cli._register_component_commands()
ROOT = typer.main.get_command(cli.app)

# (command, option): per-invocation choices of one-off commands, no deployment setting.
PER_INVOCATION = {
    ("levels status", "as_json"),
    ("levels sync", "propose_promotions"),
    ("levels sync", "device"),
    # An override is one decision about one backend, made each time.
    ("levels override", "level"),
    ("levels override", "duration"),
    ("levels override", "reason"),
    ("levels override", "by"),
    ("levels override", "clear"),
    ("init downstream", "template"),
    ("init downstream", "path"),
    ("init downstream", "force"),
    ("init downstream", "callback_url"),
    ("init downstream", "action"),
    ("init downstream", "repo"),
    ("init downstream", "cancel_on_supersede"),
    ("demo", "duration"),
    ("demo", "rate"),
    ("demo", "speed"),
    ("demo", "open_browser"),
    ("demo", "seed"),
    ("demo", "history"),
    # A test dispatch names its target each time.
    ("dispatch", "repo"),
    ("dispatch", "pr"),
    ("dispatch", "sha"),
    # A bisection's range, and which backend's bisections to list, are chosen each time.
    ("bisect", "repo"),
    ("bisect", "good"),
    ("bisect", "bad"),
    ("culprits", "repo"),
    # A query of the audit trail is chosen each time.
    ("audit", "repo"),
    ("audit", "since"),
    ("audit", "refused"),
    ("audit", "kind"),
    ("audit", "limit"),
    ("audit", "as_json"),
    # One pass (cron) or a loop (a service) is how `crcr sweep` is run, not a setting.
    ("sweep", "loop"),
    ("sweep", "interval"),
    # The sandbox is a development tool: it stands in for GitHub, configured per run.
    ("sandbox", "host"),
    ("sandbox", "port"),
    ("sandbox", "key_file"),
    ("sandbox", "install"),
    ("sandbox", "api_prefix"),
    # Playing upstream and downstream by hand: each event and token is chosen each time.
    ("sandbox token", "run_id"),
    ("sandbox token", "run_attempt"),
    ("sandbox token", "as_env"),
    ("sandbox token", "sandbox_url"),
    ("sandbox webhook", "number"),
    ("sandbox webhook", "sha"),
    ("sandbox webhook", "label"),
    ("sandbox webhook", "branch"),
    ("sandbox webhook", "relay_url"),
    ("sandbox webhook", "sandbox_url"),
    ("sandbox dispatches", "sandbox_url"),
}
# `crcr report` runs in downstream CI, where the reporter reads the runner's own
# variables (GITHUB_*, BUILDKITE_*, CRCR_DISPATCH_PAYLOAD); its options are per job.
PER_JOB_COMMANDS = {"report"}


def commands(group: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(group, TyperGroup):
        for name, command in group.commands.items():
            yield from commands(command, f"{prefix} {name}".strip())
    else:
        yield prefix, group


ALL_COMMANDS = dict(commands(ROOT))
WIDE = {"COLUMNS": "300"}  # rich wraps help at the terminal's width


def help_text(path: str) -> str:
    result = CliRunner().invoke(cli.app, [*path.split(), "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def options_of(command: Any) -> list[TyperOption]:
    return [p for p in command.params if isinstance(p, TyperOption) and p.name != "help"]


def test_the_walk_finds_the_commands_of_every_component() -> None:
    assert {"serve", "sweep", "hud serve", "demo", "report", "allowlist check"} <= set(ALL_COMMANDS)


@pytest.mark.parametrize("path", sorted(ALL_COMMANDS))
def test_every_option_shows_the_variable_behind_it(path: str) -> None:
    if path in PER_JOB_COMMANDS:
        pytest.skip("per-job options of the downstream reporter")
    shown = help_text(path)
    for option in options_of(ALL_COMMANDS[path]):
        if (path, option.name) in PER_INVOCATION:
            assert not option.envvar, f"{path} --{option.name} has a variable: drop the exemption"
            continue
        assert isinstance(option.envvar, str), f"crcr {path} --{option.name}: no envvar="
        assert option.envvar.startswith("CRCR_")
        assert f"env var: {option.envvar}" in shown, f"crcr {path} --help hides {option.envvar}"


@pytest.mark.parametrize("path", sorted(ALL_COMMANDS))
def test_an_option_named_like_a_setting_reads_that_setting(path: str) -> None:
    if path in PER_JOB_COMMANDS:
        pytest.skip("the reporter's options name the downstream's view, not the relay's settings")
    for option in options_of(ALL_COMMANDS[path]):
        if option.name in Settings.model_fields and (path, option.name) not in PER_INVOCATION:
            assert option.envvar == f"CRCR_{str(option.name).upper()}", (path, option.name)


def test_every_variable_an_option_reads_is_a_setting() -> None:
    settings = {f"CRCR_{name.upper()}" for name in Settings.model_fields}
    for path, command in ALL_COMMANDS.items():
        if path in PER_JOB_COMMANDS:
            continue
        for option in options_of(command):
            if option.envvar:
                assert option.envvar in settings, f"crcr {path}: {option.envvar} not in Settings"


def test_the_root_options_show_their_variables() -> None:
    shown = " ".join(CliRunner().invoke(cli.app, ["--help"], env=WIDE).output.split())
    assert "env var: CRCR_LOG_LEVEL" in shown
    assert "env var: CRCR_LOG_FORMAT" in shown


def test_version_flag_prints_what_the_version_command_prints() -> None:
    runner = CliRunner()
    flag = runner.invoke(cli.app, ["--version"])
    command = runner.invoke(cli.app, ["version"])
    assert flag.exit_code == 0, flag.output
    assert flag.output == command.output
    assert flag.output.strip()


def test_a_bad_log_level_names_its_variable() -> None:
    result = CliRunner().invoke(cli.app, ["version"], env={"CRCR_LOG_LEVEL": "loud"})
    assert result.exit_code == 2
    assert "CRCR_LOG_LEVEL" in result.output


def test_host_and_port_come_from_the_environment_for_both_servers() -> None:
    for path in ("serve", "hud serve"):
        envvars = {o.name: o.envvar for o in options_of(ALL_COMMANDS[path])}
        assert envvars["host"] == "CRCR_HOST"
        assert envvars["port"] == "CRCR_PORT"
