"""How `paths` / `paths_ignore` globs read a PR's changed files (SPEC §15), as GitHub
Actions' path filters do: `*` within a segment, `**` across segments."""

from __future__ import annotations

import pytest

from crcr.relay.allowlist.budget_fields import EntryBudget
from crcr.relay.budgets.paths import glob_pattern, wants_files


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("src/**", "src/a/b/c.py", True),
        ("src/**", "docs/src/a.py", False),
        ("*.md", "README.md", True),
        ("*.md", "docs/README.md", False),
        ("**/*.md", "docs/deep/README.md", True),
        ("**/*.md", "README.md", True),
        ("torch/*/linear.py", "torch/nn/linear.py", True),
        ("torch/*/linear.py", "torch/nn/modules/linear.py", False),
        ("setup.py", "setup.py", True),
        ("setup.py", "setupXpy", False),
        ("file?.txt", "file1.txt", True),
    ],
)
def test_globs_read_as_in_github_actions(glob: str, path: str, matches: bool) -> None:
    assert bool(glob_pattern(glob).fullmatch(path)) is matches


SOURCE = EntryBudget(paths=("src/**",))
NOT_DOCS = EntryBudget(paths_ignore=("docs/**", "**/*.md"))
SOURCE_NOT_DOCS = EntryBudget(paths=("src/**",), paths_ignore=("**/*.md",))


@pytest.mark.parametrize(
    ("budget", "files", "wanted"),
    [
        (SOURCE, ["docs/a.md"], False),
        (SOURCE, ["docs/a.md", "src/x.py"], True),
        (NOT_DOCS, ["docs/a.rst", "README.md"], False),
        (NOT_DOCS, ["README.md", "setup.py"], True),
        (SOURCE_NOT_DOCS, ["src/notes.md"], False),
        (SOURCE_NOT_DOCS, ["src/notes.md", "src/x.py"], True),
        (SOURCE, [], False),
        (EntryBudget(), [], True),
    ],
)
def test_a_backend_is_wanted_when_any_file_counts(
    budget: EntryBudget, files: list[str], wanted: bool
) -> None:
    assert wants_files(budget, files) is wanted
