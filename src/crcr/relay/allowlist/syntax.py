"""The allowlist's surface rules: strict YAML reading, GitHub name rules, problem reports."""

from __future__ import annotations

import datetime
import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./-]+")

LABEL_PREFIX = "ciflow/crcr/"
# GitHub logins: letters, digits and inner hyphens, at most 39 characters. (Some old
# accounts have consecutive hyphens, so those are allowed.)
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?")
_REPO_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_DEVICE = re.compile(r"[a-z0-9][a-z0-9_.-]*")
# GitHub caps label names at 50 characters; the device follows `ciflow/crcr/`.
_MAX_DEVICE = 50 - len(LABEL_PREFIX)
_PIPELINE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an allowlist: where (level, then entry index or keys) and what."""

    level: str
    entry: tuple[int | str, ...]
    message: str

    def where(self) -> str:
        """The location as a reader would write it: `L4[2]`, `L3.xpu.org/repo`."""
        parts = [self.level or "allowlist"]
        for part in self.entry:
            if isinstance(part, int):
                parts.append(f"[{part}]")
            elif _PLAIN_KEY.fullmatch(part):
                parts.append(f".{part}")
            else:
                parts.append(f"[{part!r}]")
        return "".join(parts)

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"


class AllowlistError(ValueError):
    """The allowlist is invalid as a whole; `problems` lists everything wrong with it."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = [f"invalid allowlist ({count} problem{'s' if count != 1 else ''}):"]
        lines += [f"  {problem}" for problem in self.problems]
        super().__init__("\n".join(lines))


def type_name(value: object) -> str:
    """Name a YAML value's type the way the file's author thinks of it."""
    names: list[tuple[type | tuple[type, ...], str]] = [
        (type(None), "nothing (null)"),
        (bool, "a boolean"),
        (int, "a number"),
        (float, "a number"),
        (str, "a string"),
        (list, "a list"),
        (dict, "a mapping"),
        ((datetime.date, datetime.datetime), "a date"),
    ]
    for kind, name in names:
        if isinstance(value, kind):
            return name
    return type(value).__name__


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that records duplicate mapping keys, which YAML would silently drop."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, Problem]] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                line = key_node.start_mark.line + 1
                message = f"duplicate key {key!r} at line {line} (YAML keeps only the last one)"
                self.duplicates.append((line, Problem("", (), message)))
            elif isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str | bytes) -> tuple[object, list[Problem]]:
    """Load one YAML document; syntax errors and duplicate keys come back as problems."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, [Problem("", (), f"not UTF-8 text (byte {exc.start})")]
    loader = _StrictLoader(text)
    try:
        document = loader.get_single_data()
        return document, [problem for _, problem in sorted(loader.duplicates, key=lambda d: d[0])]
    except yaml.MarkedYAMLError as exc:
        return None, [Problem("", (), _syntax_message(exc))]
    except yaml.YAMLError as exc:
        return None, [Problem("", (), f"YAML syntax error: {exc}")]
    finally:
        loader.dispose()


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    message = "YAML syntax error"
    if mark is not None:
        message += f" at line {mark.line + 1}, column {mark.column + 1}"
    message += f": {exc.problem or exc.context or 'invalid YAML'}"
    if exc.problem and exc.context and exc.context_mark:
        message += f" ({exc.context} at line {exc.context_mark.line + 1})"
    return message


def check_run_label(device: str) -> str:
    """The PR label that opts a pull request in to a device's L3 check runs."""
    return LABEL_PREFIX + device


def repo_problem(repo: str) -> str | None:
    """What is wrong with `repo` as a GitHub `owner/repo` name, or None if nothing."""
    owner, slash, name = repo.partition("/")
    if not slash or "/" in name or not owner or not name:
        return f"{repo!r} is not of the form owner/repo"
    if not _LOGIN.fullmatch(owner):
        return f"{repo!r}: owner {owner!r} is not a valid GitHub login"
    if not _REPO_NAME.fullmatch(name) or name in (".", ".."):
        return (
            f"{repo!r}: repository name {name!r} may only contain letters, digits,"
            " '.', '-' and '_' (at most 100)"
        )
    return None


def device_problem(device: str) -> str | None:
    """What is wrong with `device` as the suffix of a `ciflow/crcr/<device>` label."""
    if not device.strip():
        return "device name must not be empty"
    if not _DEVICE.fullmatch(device):
        label = check_run_label(device)
        return f"device name must match [a-z0-9][a-z0-9_.-]* (it becomes the label {label})"
    if len(device) > _MAX_DEVICE:
        return f"device name is longer than {_MAX_DEVICE} characters (GitHub caps labels at 50)"
    return None


def login_or_none(text: str) -> str | None:
    """The GitHub login `text` names (an `@` in front is allowed), or None if it is not one."""
    login = text.strip().removeprefix("@")
    return login if _LOGIN.fullmatch(login) else None


def pipeline_problem(key: str) -> str | None:
    """What is wrong with `key` as a Buildkite `org/pipeline` slug, or None if nothing."""
    return None if _PIPELINE.fullmatch(key) else f"{key!r} is not an org/pipeline slug"
