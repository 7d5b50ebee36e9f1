"""The allowlist of downstream repositories and their levels (SPEC §3): model and validation.

Pure: text in, a frozen `Allowlist` (or every problem at once) out. The YAML shapes are
those of PyTorch's `.github/allowlist.yml`, which the reference relay reads:

    L1: [owner/repo, ...]                       # items may also be `owner/repo: oncalls`
    L2: [owner/repo, ...]
    L3: {device: {owner/repo: [oncall, ...]}}   # device → repo → oncalls
    L4: [owner/repo, {owner/repo: "oncall1, oncall2"}, {owner/repo: [oncall1]}]

Oncalls may be a list, a comma-separated string, or (as the reference accepts) a mapping
`{oncalls: ..., events: [pull_request, nightly]}`. The mapping may also pin who may
report for the repo: `repository_id` (GitHub's numeric id, so a renamed or re-created
repository does not inherit the level), `workflow` (a pattern the token's
`job_workflow_ref` must match) and `ref` (a pattern its `ref` must match).

An L4 entry has a device too (SPEC §10.2): named in the mapping (`device: npu`), or else
the repository's name (`org4/critical` → `critical`). A temporarily demoted L4 backend
is label-gated like L3 (`ciflow/crcr/<device>`), and its demotion pull request moves it
under `L3: <device>:`; without a device it would be gated on a label no PR can carry.
An L3 entry may repeat its device key in the mapping (a demoted L4 entry keeps its own).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from crcr.relay.allowlist.budget_fields import BUDGET_FIELDS, NO_BUDGET, EntryBudget, read_budget
from crcr.relay.allowlist.buildkite_repos import read_buildkite_repos
from crcr.relay.allowlist.devices import entry_device
from crcr.relay.allowlist.syntax import (
    LABEL_PREFIX,
    AllowlistError,
    Problem,
    check_run_label,
    device_problem,
    load_yaml,
    login_or_none,
    repo_problem,
    type_name,
)

__all__ = [
    "EVENTS",
    "LABEL_PREFIX",
    "Allowlist",
    "AllowlistEntry",
    "AllowlistError",
    "Level",
    "Problem",
    "TokenConstraints",
    "check_run_label",
    "parse_allowlist",
    "validate_allowlist",
]

# The reference's per-entry `events`; an entry without them takes part in both.
EVENTS = frozenset({"pull_request", "nightly"})

_TOP_LEVEL_KEYS = ("L1", "L2", "L3", "L4", "buildkite_repos")
_ENTRY_FIELDS = ("oncalls", "events", "repository_id", "workflow", "ref", "device", *BUDGET_FIELDS)


class Level(enum.IntEnum):
    """An allowlist level; higher levels get more (L2 results, L3/L4 check runs)."""

    L1 = 1
    L2 = 2
    L3 = 3
    L4 = 4

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class AllowlistEntry:
    """One downstream repository as the allowlist names it (`repo` keeps its spelling).

    `device` is the L3 key the entry is under, or an L4 entry's device (named, or its
    repository's name); None at L1 and L2.
    """

    repo: str
    level: Level
    device: str | None = None
    oncalls: tuple[str, ...] = ()
    events: frozenset[str] = EVENTS
    constraints: TokenConstraints = field(default_factory=lambda: TokenConstraints())
    budget: EntryBudget = NO_BUDGET  # SPEC §15: its cap and path filters


@dataclass(frozen=True)
class TokenConstraints:
    """What a GitHub Actions token must also say to report for an entry (all optional)."""

    repository_id: str | None = None
    workflow: str | None = None
    ref: str | None = None


@dataclass(frozen=True)
class Allowlist:
    """A validated allowlist; repository lookups ignore case, as GitHub does."""

    entries: tuple[AllowlistEntry, ...] = ()
    # The reference maps Buildkite pipelines here; crcr takes that mapping from operator
    # configuration only (SPEC §2, CRCR_OIDC_ISSUERS), so it is validated and kept, not used.
    buildkite_repos: Mapping[str, str] = field(default_factory=dict)
    _by_repo: Mapping[str, AllowlistEntry] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_repo", {e.repo.lower(): e for e in self.entries})

    def __len__(self) -> int:
        return len(self.entries)

    def entry(self, repo: str) -> AllowlistEntry | None:
        """The entry for `repo` (any case), or None when it is not allowlisted."""
        return self._by_repo.get(repo.lower())

    def level_of(self, repo: str) -> Level | None:
        """The level of `repo`, or None when it is not allowlisted."""
        found = self.entry(repo)
        return found.level if found else None

    def oncalls(self, repo: str) -> tuple[str, ...]:
        """The GitHub logins to notify about `repo`'s failures."""
        found = self.entry(repo)
        return found.oncalls if found else ()

    def events_of(self, repo: str) -> frozenset[str]:
        """The event kinds (`pull_request`, `nightly`) `repo` takes part in."""
        found = self.entry(repo)
        return found.events if found else frozenset()

    def device_of(self, repo: str) -> str | None:
        """The device of an L3 repo (its label is `ciflow/crcr/<device>`), else None."""
        found = self.entry(repo)
        return found.device if found else None

    def devices(self) -> tuple[str, ...]:
        """Every L3 device, in file order."""
        return tuple(
            dict.fromkeys(e.device for e in self.entries if e.device and e.level == Level.L3)
        )

    def repos_for_device(self, device: str) -> tuple[str, ...]:
        """The repos a `ciflow/crcr/<device>` label opts in (label names ignore case).

        L4 repos are among them: a temporarily demoted L4 backend is gated on its label.
        """
        wanted = device.lower()
        return tuple(e.repo for e in self.entries if e.device == wanted)

    def repos_at(self, level: Level) -> tuple[str, ...]:
        """The repos at exactly `level`, in file order."""
        return tuple(e.repo for e in self.entries if e.level == level)

    def repos_at_least(self, level: Level) -> tuple[str, ...]:
        """The repos at `level` or above, highest level first."""
        return tuple(e.repo for e in self._ranked() if e.level >= level)

    def dispatch_targets(self) -> tuple[str, ...]:
        """Every allowlisted repo, highest level first, then in file order.

        Every level is dispatched to (SPEC §3); when dispatches are rationed by a
        concurrency limit, the blocking (L4) backends go out first.
        """
        return tuple(e.repo for e in self._ranked())

    def needs_check_run(self, repo: str, labels: Iterable[str]) -> bool:
        """Whether `repo` gets an upstream check run on a PR carrying `labels` (SPEC §3)."""
        found = self.entry(repo)
        if found is None or found.level < Level.L3:
            return False
        if found.level == Level.L4:
            return True
        wanted = check_run_label(found.device or "")
        return any(label.lower() == wanted for label in labels)

    def _ranked(self) -> list[AllowlistEntry]:
        return sorted(self.entries, key=lambda e: -e.level)


def parse_allowlist(text: str | bytes) -> Allowlist:
    """Parse and validate allowlist YAML; raise `AllowlistError` with every problem."""
    raw, problems = load_yaml(text)
    return _Validator(problems).run(raw)


def validate_allowlist(raw: object) -> Allowlist:
    """Validate an already-loaded YAML document (a mapping of levels)."""
    return _Validator([]).run(raw)


class _Validator:
    """Walks the document once, collecting every problem rather than stopping at the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        self.entries: list[AllowlistEntry] = []
        self.seen: dict[str, str] = {}  # lower-cased repo → where it was first listed

    def run(self, raw: object) -> Allowlist:
        buildkite: dict[str, str] = {}
        if isinstance(raw, dict):
            for key in raw:
                if key not in _TOP_LEVEL_KEYS:
                    self.problem(str(key), (), "unknown top-level key (expected L1, L2, L3, L4)")
            for name in ("L1", "L2", "L3", "L4"):
                if raw.get(name) is not None:
                    self.level(Level[name], raw[name])
            buildkite = read_buildkite_repos(raw.get("buildkite_repos"), self.problem)
        elif raw is not None:
            self.problem("", (), f"must be a mapping of levels L1-L4, got {type_name(raw)}")
        if self.problems:
            raise AllowlistError(self.problems)
        return Allowlist(tuple(self.entries), buildkite)

    def problem(self, level: str, entry: tuple[int | str, ...], message: str) -> None:
        self.problems.append(Problem(level, entry, message))

    def level(self, level: Level, raw: object) -> None:
        if level == Level.L3:
            self.devices(raw)
        elif not isinstance(raw, list):
            self.problem(level.name, (), f"must be a list of repositories, got {type_name(raw)}")
        else:
            for index, item in enumerate(raw):
                self.list_item(level, index, item)

    def list_item(self, level: Level, index: int, item: object) -> None:
        where = (index,)
        if isinstance(item, str):
            self.add(level, where, item, None, None)
        elif isinstance(item, dict):
            if len(item) != 1:
                message = f"a mapping entry must have exactly one key, owner/repo (has {len(item)})"
                self.problem(level.name, where, message)
                return
            ((repo, oncalls),) = item.items()
            self.add(level, where, repo, None, oncalls)
        else:
            expected = "an owner/repo string or a one-key mapping owner/repo: oncalls"
            self.problem(level.name, where, f"must be {expected}, got {type_name(item)}")

    def devices(self, raw: object) -> None:
        if not isinstance(raw, dict):
            self.problem(
                "L3", (), f"must be a mapping of device → repositories, got {type_name(raw)}"
            )
            return
        for device, repos in raw.items():
            where: tuple[int | str, ...] = (str(device),)
            if not isinstance(device, str):
                self.problem("L3", where, f"device name must be a string, got {type_name(device)}")
                device = str(device)
            elif trouble := device_problem(device):
                self.problem("L3", where, trouble)
            if repos is None:
                continue
            if not isinstance(repos, dict):
                message = f"must be a mapping of owner/repo → oncalls, got {type_name(repos)}"
                self.problem("L3", where, message)
                continue
            for repo, oncalls in repos.items():
                self.add(Level.L3, (device, str(repo)), repo, device, oncalls)

    def add(
        self,
        level: Level,
        where: tuple[int | str, ...],
        raw_repo: object,
        device: str | None,
        raw_oncalls: object,
    ) -> None:
        repo = self.repo(level.name, where, raw_repo)
        oncalls, events = self.metadata(level.name, where, raw_oncalls)
        constraints = self.constraints(level.name, where, raw_oncalls)
        named = raw_oncalls.get("device") if isinstance(raw_oncalls, dict) else None
        budget = read_budget(raw_oncalls, lambda message: self.problem(level.name, where, message))
        if repo is not None:
            device, trouble = entry_device(level, repo, device, named)
            if trouble is not None:
                self.problem(level.name, where, trouble)
            self.entries.append(
                AllowlistEntry(repo, level, device, oncalls, events, constraints, budget)
            )

    def repo(self, level: str, where: tuple[int | str, ...], raw: object) -> str | None:
        if not isinstance(raw, str):
            self.problem(
                level, where, f"repository must be an owner/repo string, got {type_name(raw)}"
            )
            return None
        repo = raw.strip()
        trouble = repo_problem(repo)
        if trouble:
            self.problem(level, where, trouble)
            return None
        here = Problem(level, where, "").where()
        first = self.seen.setdefault(repo.lower(), here)
        if first != here:
            self.problem(level, where, f"{repo!r} is listed twice: also at {first}")
            return None
        return repo

    def metadata(
        self, level: str, where: tuple[int | str, ...], raw: object
    ) -> tuple[tuple[str, ...], frozenset[str]]:
        if not isinstance(raw, dict):
            return self.oncall_list(level, where, raw), EVENTS
        unknown = sorted(str(key) for key in raw if key not in _ENTRY_FIELDS)
        if unknown:
            allowed = ", ".join(_ENTRY_FIELDS)
            message = f"unknown field(s) {', '.join(unknown)} (an entry may have {allowed})"
            self.problem(level, where, message)
        return self.oncall_list(level, where, raw.get("oncalls")), self.events(
            level, where, raw.get("events", sorted(EVENTS))
        )

    def constraints(
        self, level: str, where: tuple[int | str, ...], raw: object
    ) -> TokenConstraints:
        if not isinstance(raw, dict):
            return TokenConstraints()
        repository_id = raw.get("repository_id")
        if repository_id is not None and (
            isinstance(repository_id, bool)
            or not str(repository_id).isdigit()
            or int(repository_id) < 1
        ):
            self.problem(level, where, "repository_id must be a positive integer (GitHub's id)")
            repository_id = None
        patterns: dict[str, str | None] = {}
        for name in ("workflow", "ref"):
            value = raw.get(name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                self.problem(level, where, f"{name} must be a non-empty pattern string")
                value = None
            patterns[name] = value.strip() if isinstance(value, str) else None
        return TokenConstraints(
            None if repository_id is None else str(int(repository_id)),
            patterns["workflow"],
            patterns["ref"],
        )

    def oncall_list(self, level: str, where: tuple[int | str, ...], raw: object) -> tuple[str, ...]:
        if raw is None:
            return ()
        if isinstance(raw, str):
            items: list[object] = [part for part in raw.split(",") if part.strip()]
        elif isinstance(raw, list):
            items = list(raw)
        else:
            expected = "a list of GitHub logins or a comma-separated string"
            message = f"oncalls must be {expected}, got {type_name(raw)}"
            self.problem(level, where, message)
            return ()
        logins: dict[str, str] = {}
        for item in items:
            if not isinstance(item, str):
                self.problem(level, where, f"oncall must be a GitHub login, got {type_name(item)}")
                continue
            login = login_or_none(item)
            if login is None:
                self.problem(level, where, f"oncall {item.strip()!r} is not a valid GitHub login")
                continue
            logins.setdefault(login.lower(), login)
        return tuple(logins.values())

    def events(self, level: str, where: tuple[int | str, ...], raw: object) -> frozenset[str]:
        if not isinstance(raw, list) or not raw:
            self.problem(level, where, f"events must be a non-empty list, got {type_name(raw)}")
            return EVENTS
        unsupported = [item for item in raw if item not in EVENTS]
        if unsupported:
            names = ", ".join(repr(item) for item in unsupported)
            message = f"unsupported event(s) {names} (expected {', '.join(sorted(EVENTS))})"
            self.problem(level, where, message)
        return frozenset(item for item in raw if item in EVENTS)
