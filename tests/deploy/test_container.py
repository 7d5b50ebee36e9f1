"""The container recipe in deploy/container: slim, non-root, `crcr serve`, a health check
on /healthz, dependencies from the constraints file — each held against the repository."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.deploy.recipes import DEPLOY, REPOSITORY, parse_crcr, unknown_variables

DOCKERFILE = DEPLOY / "container" / "Dockerfile"


def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        words = (pending + line).split(None, 1)
        pending = ""
        result.append((words[0].upper(), words[1] if len(words) > 1 else ""))
    return result


def _all(name: str) -> list[str]:
    return [arguments for instruction, arguments in instructions() if instruction == name]


def _exec_form(arguments: str) -> list[str]:
    words = json.loads(arguments)
    assert isinstance(words, list) and all(isinstance(word, str) for word in words)
    return words


def _environment() -> dict[str, str]:
    variables: dict[str, str] = {}
    for arguments in _all("ENV"):
        for pair in shlex.split(arguments):
            name, _, value = pair.partition("=")
            variables[name] = value
    return variables


def healthcheck_command() -> list[str]:
    """The HEALTHCHECK's command, with this interpreter standing in for the image's."""
    (healthcheck,) = _all("HEALTHCHECK")
    words = _exec_form(healthcheck[healthcheck.index("CMD") + 3 :].strip())
    assert words[0] == "python"
    return [sys.executable, *words[1:]]


def test_both_stages_build_on_a_slim_python_image() -> None:
    bases = [arguments.split()[0] for arguments in _all("FROM")]

    assert bases and all(base.startswith("python:") and base.endswith("-slim") for base in bases)
    assert len(set(bases)) == 1  # the venv's interpreter link must exist in the final stage


def test_the_image_runs_as_a_user_that_is_not_root() -> None:
    (user,) = _all("USER")

    assert user not in {"root", "0"} and not user.startswith("0:")


def test_the_entry_point_is_crcr_serve() -> None:
    (entrypoint,) = _all("ENTRYPOINT")
    (command,) = _all("CMD")
    words = _exec_form(entrypoint) + _exec_form(command)

    assert words[:2] == ["crcr", "serve"]
    parse_crcr(words[1:])


def test_every_variable_it_sets_is_a_crcr_setting() -> None:
    assert unknown_variables(_environment()) == []


def test_it_listens_on_the_port_it_exposes_on_every_interface() -> None:
    environment = _environment()
    (exposed,) = _all("EXPOSE")

    assert environment["CRCR_HOST"] == "0.0.0.0"
    assert environment["CRCR_PORT"] == exposed


def test_the_health_check_asks_healthz() -> None:
    assert "/healthz" in " ".join(healthcheck_command())


def test_what_it_copies_exists_and_dependencies_come_from_the_constraints_file() -> None:
    sources = [
        word
        for arguments in _all("COPY")
        if not arguments.startswith("--from")
        for word in arguments.split()[:-1]
    ]
    (install,) = [arguments for arguments in _all("RUN") if "pip install" in arguments]

    assert sources and all((REPOSITORY / source).exists() for source in sources)
    assert "--constraint constraints.txt" in install
    assert "constraints.txt" in sources


def test_the_build_context_leaves_out_local_environments() -> None:
    ignored = (REPOSITORY / ".dockerignore").read_text().split()

    assert {".venv", "node_modules", ".git"} <= set(ignored)
