"""Move one entry of the allowlist to another level by editing its text (SPEC §10.1).

A pull request that rewrote the whole file through a YAML dumper would lose every
comment and reorder keys, and reviewers would have to read all of it. So the entry's
lines are cut out and put back, as written, at the end of the target level's block
(under its device for L3), re-indented and with a list dash added or taken away: its
oncalls, events, pins (`repository_id`, `workflow`, `ref`) and comments move with it
byte for byte, and every other byte stays as it was. Rendering the entry afresh from
the parsed model once dropped the pins that bind a backend's tokens (issue 29), so
nothing is rendered. The result is parsed with the real allowlist parser and compared
with the original before anyone commits it: the *whole* entry (pins, oncalls, events)
is the same but for its level and device, and every other entry is unchanged
(SPEC §10.2 invariant 3).

Block-style sections (the shape PyTorch's file and `crcr allowlist check`'s examples
use) are edited; a target level written in flow style (`L2: [a/b, c/d]`) is refused
with a message, for a person to edit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from crcr.relay.allowlist.model import AllowlistEntry, AllowlistError, Level, parse_allowlist

_HEADER = re.compile(r"^(L[1-4])\s*:(.*)$")
# A list item without a value: the repo (maybe quoted), then only a comment or nothing.
_BARE = re.compile(r"^(?P<repo>(['\"]?)[^'\":#\s]+\2)(?=\s*(#|$))")
_INDENT = 2


class AllowlistEditError(ValueError):
    """The entry cannot be moved by a text edit (the message says why)."""


@dataclass(frozen=True)
class _Section:
    """A top-level level key: its header line and the lines of its block."""

    header: int
    end: int  # index after the block's last indented line


def move_entry(text: str, repo: str, to_level: Level, device: str | None = None) -> str:
    """The allowlist text with `repo` moved to `to_level` (under `device` for L3).

    An L4 entry moving to L3 goes under its own device (SPEC §10.2) unless `device`
    names another.
    """
    before = parse_allowlist(text)
    entry = before.entry(repo)
    if entry is None:
        raise AllowlistEditError(f"{repo} is not in the allowlist")
    if to_level == Level.L3 and not device and entry.level == Level.L4:
        device = entry.device
    if to_level == Level.L3 and not device:
        raise AllowlistEditError(f"moving {entry.repo} to L3 needs a device for its label")
    if entry.level == to_level and (to_level != Level.L3 or entry.device == device):
        return text
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start, stop, column = _entry_span(lines, entry)
    moved = _Moved(lines[start][column:], lines[start + 1 : stop], column)
    lines[start:stop] = []
    if to_level == Level.L3:
        assert device is not None
        _insert_under_device(lines, device, moved.as_mapping)
    else:
        _insert_list_item(lines, to_level, moved.as_list_item)
    result = "".join(lines)
    verify_move(text, result, entry.repo, to_level, device)
    return result


def verify_move(original: str, edited: str, repo: str, to_level: Level, device: str | None) -> None:
    """Parse both texts; raise unless only `repo`'s position (level, device) changed.

    Whole entries are compared — pins, oncalls and events included — so an edit that
    loses anything of the entry cannot pass.
    """
    try:
        before, after = parse_allowlist(original), parse_allowlist(edited)
    except AllowlistError as exc:
        raise AllowlistEditError(f"the edited allowlist does not parse: {exc}") from None
    old, new = before.entry(repo), after.entry(repo)
    if old is None or new is None:
        raise AllowlistEditError(f"{repo} went missing from the edited allowlist")
    expected = replace(old, level=to_level, device=_device_at(old, to_level, device))
    if new != expected:
        raise AllowlistEditError(f"the edited entry reads {new}, expected {expected}")
    others_before = {e.repo.lower(): e for e in before.entries if e.repo.lower() != repo.lower()}
    others_after = {e.repo.lower(): e for e in after.entries if e.repo.lower() != repo.lower()}
    if others_before != others_after or before.buildkite_repos != after.buildkite_repos:
        raise AllowlistEditError("the edit changed other entries of the allowlist")


def _device_at(old: AllowlistEntry, to_level: Level, device: str | None) -> str | None:
    """The device the moved entry must have at `to_level`."""
    if to_level == Level.L3:
        return device
    if to_level == Level.L4:
        return old.device
    return None


@dataclass(frozen=True)
class _Moved:
    """An entry's text as written: its first line from the repo on, the lines under it."""

    head: str  # `org/repo: [a, b]  # comment\n`, `"org/repo":\n` or `org/repo  # c\n`
    body: list[str]
    column: int  # where the repo started in the original line

    def _shifted(self, column: int) -> list[str]:
        delta = column - self.column
        return [
            " " * (_indent(line) + delta) + line.lstrip(" ") if _is_content(line) else line
            for line in self.body
        ]

    def as_list_item(self, indent: int) -> list[str]:
        """`- org/repo…` at `indent`, what was under it kept under it."""
        return [" " * indent + "- " + self.head, *self._shifted(indent + 2)]

    def as_mapping(self, indent: int) -> list[str]:
        """`org/repo: …` at `indent`; a bare `- org/repo` item becomes `org/repo: []`."""
        head = self.head
        match = _BARE.match(head)
        if match is not None:  # a plain scalar cannot stand as a mapping entry
            head = match.group("repo") + ": []" + head[match.end("repo") :]
        return [" " * indent + head, *self._shifted(indent)]


# --- finding things ---------------------------------------------------------------------
def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_content(line: str) -> bool:
    return bool(line.strip())


def _sections(lines: list[str]) -> dict[str, _Section]:
    found: dict[str, _Section] = {}
    headers = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _HEADER.match(line))]
    for number, (index, name) in enumerate(headers):
        limit = headers[number + 1][0] if number + 1 < len(headers) else len(lines)
        end = index + 1
        for position in range(index + 1, limit):
            line = lines[position]
            if _is_content(line) and _indent(line) == 0 and not line.startswith("#"):
                break
            if _is_content(line) and _indent(line) > 0:
                end = position + 1
        found[name] = _Section(index, end)
    return found


def _repo_line(repo: str) -> re.Pattern[str]:
    name = re.escape(repo)
    return re.compile(
        rf"^(?P<indent> *)(?P<dash>- +)?(?P<q>['\"]?)(?P<repo>{name})(?P=q)(?=\s*(:|#|$))",
        re.IGNORECASE,
    )


def _entry_span(lines: list[str], entry: AllowlistEntry) -> tuple[int, int, int]:
    """The entry's first line, the line after its last, and the column its repo starts."""
    section = _sections(lines).get(entry.level.name)
    if section is None:
        raise AllowlistEditError(f"{entry.level} is not a block section of the file")
    pattern = _repo_line(entry.repo)
    for index in range(section.header + 1, section.end):
        match = pattern.match(lines[index])
        if match is None:
            continue
        column = match.start("q")
        stop = index + 1
        for position in range(index + 1, section.end):
            if _is_content(lines[position]) and _indent(lines[position]) <= column:
                break
            if _is_content(lines[position]):
                stop = position + 1
        return index, stop, column
    raise AllowlistEditError(f"{entry.repo} is not written as a block entry under {entry.level}")


# --- inserting --------------------------------------------------------------------------
def _open_header(lines: list[str], section: _Section, empty_flow: str) -> None:
    """Turn `L2: []` into `L2:`; refuse a non-empty flow-style section."""
    line = lines[section.header]
    name, _, value = line.partition(":")
    code, hash_mark, comment = value.partition("#")
    if code.strip() == empty_flow:
        lines[section.header] = f"{name}:" + (f"  #{comment}" if hash_mark else "\n")
    elif code.strip():
        raise AllowlistEditError(f"{name} is written in flow style; move the entry by hand")


def _new_section(lines: list[str], level: Level, body: list[str]) -> None:
    """Add a missing level, before the first higher level so the file stays in order."""
    sections = _sections(lines)
    later = [sections[f"L{n}"].header for n in range(level + 1, 5) if f"L{n}" in sections]
    at = min(later) if later else len(lines)
    lines[at:at] = [f"{level}:\n", *body]


Render = Callable[[int], list[str]]
"""The moved entry's lines, given the indentation they start at."""


def _insert_list_item(lines: list[str], level: Level, render: Render) -> None:
    section = _sections(lines).get(level.name)
    if section is None:
        _new_section(lines, level, render(_INDENT))
        return
    _open_header(lines, section, "[]")
    block = lines[section.header + 1 : section.end]
    items = [_indent(line) for line in block if line.lstrip().startswith("- ")]
    indent = items[0] if items else _INDENT
    lines[section.end : section.end] = render(indent)


def _insert_under_device(lines: list[str], device: str, render: Render) -> None:
    section = _sections(lines).get("L3")
    if section is None:
        _new_section(lines, Level.L3, [f"{' ' * _INDENT}{device}:\n", *render(2 * _INDENT)])
        return
    _open_header(lines, section, "{}")
    device_line = re.compile(rf"^(?P<indent> +)(?P<q>['\"]?){re.escape(device)}(?P=q)\s*:")
    for index in range(section.header + 1, section.end):
        match = device_line.match(lines[index])
        if match is None:
            continue
        own = len(match.group("indent"))
        _, _, value = lines[index].partition(":")
        if value.partition("#")[0].strip() not in ("", "{}"):
            raise AllowlistEditError(f"L3.{device} is written in flow style; move it by hand")
        if value.partition("#")[0].strip() == "{}":
            lines[index] = lines[index][: match.end()] + "\n"
        stop, indents = index + 1, []
        for position in range(index + 1, section.end):
            if _is_content(lines[position]) and _indent(lines[position]) <= own:
                break
            if _is_content(lines[position]):
                stop = position + 1
                indents.append(_indent(lines[position]))
        indent = indents[0] if indents else own + _INDENT
        lines[stop:stop] = render(indent)
        return
    block = lines[section.header + 1 : section.end]
    devices = [
        _indent(line) for line in block if _is_content(line) and not line.strip().startswith("#")
    ]
    own = min(devices) if devices else _INDENT
    lines[section.end : section.end] = [f"{' ' * own}{device}:\n", *render(own + _INDENT)]
