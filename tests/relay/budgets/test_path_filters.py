"""`paths` / `paths_ignore` on a PR's changed files (SPEC §15 "Paths").

A docs-only PR is not dispatched to a backend that runs only for source changes, and
the answer says it was skipped; a later push to the PR that touches a source file is
dispatched as usual. Files that cannot be known never cost a backend its run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.relay.budgets.budget_world import FILTERED, OPEN, Budgeted, dispatched_prs, open_pr
from tests.relay.callback_harness import StoreOpener, signing_key
from tests.relay.checks_harness import UPSTREAM, sandbox_app

from crcr.sandbox.github_identity import SandboxApp
from crcr.sandbox.github_pull_files import set_pull_files
from crcr.sandbox.oidc_issuer import SigningKey

__all__ = ["sandbox_app", "signing_key"]


@pytest.fixture
def opener(tmp_path: Path) -> StoreOpener:
    """Paths are judged before any store is asked: one store kind is enough here."""
    return StoreOpener("sqlite", tmp_path / "state.db")


DOCS_HEAD, SOURCE_HEAD = "d0c5" * 10, "5bc" * 13 + "f"


async def test_a_docs_only_pr_skips_a_source_backend_until_a_push_touches_source(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.sandbox.add_pull(UPSTREAM, 9, head_sha=DOCS_HEAD)
    set_pull_files(relay.sandbox, UPSTREAM, 9, ["docs/index.md", "README.md", "src/notes.md"])
    async with relay.instance() as world, relay.instance() as other:
        _, answer = await open_pr(world, 9, DOCS_HEAD)
        assert answer["skipped"] == [FILTERED]
        assert FILTERED not in answer["dispatched"]
        assert OPEN in answer["dispatched"]

        relay.sandbox.record_pull_head(UPSTREAM, 9, head_sha=SOURCE_HEAD)
        set_pull_files(relay.sandbox, UPSTREAM, 9, ["docs/index.md", "torch/nn/linear.py"])
        _, answer = await open_pr(other, 9, SOURCE_HEAD, "synchronize")  # the push's webhook

        assert FILTERED in answer["dispatched"]
        assert "skipped" not in answer
        assert dispatched_prs(world, FILTERED) == [9]


async def test_the_hud_pr_view_says_skipped_until_a_matching_push_runs(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.sandbox.add_pull(UPSTREAM, 9, head_sha=DOCS_HEAD)
    set_pull_files(relay.sandbox, UPSTREAM, 9, ["docs/index.md"])
    async with relay.instance() as world:
        await open_pr(world, 9, DOCS_HEAD)
        await open_pr(world, 9, DOCS_HEAD, "reopened")  # the same head again: listed once

        view = (await world.client.get("/api/crcr/pr/9")).json()
        assert view["skipped"] == [
            {"repo": FILTERED, "head_sha": DOCS_HEAD, "reason": "skipped: no matching paths"}
        ]
        page = (await world.client.get("/crcr/pr/9")).text
        assert f'data-skipped="{FILTERED}"' in page
        assert "skipped: no matching paths" in page

        relay.sandbox.record_pull_head(UPSTREAM, 9, head_sha=SOURCE_HEAD)
        set_pull_files(relay.sandbox, UPSTREAM, 9, ["torch/nn/linear.py"])
        delivery, _ = await open_pr(world, 9, SOURCE_HEAD, "synchronize")
        assert (await world.report(FILTERED, delivery, "in_progress")).is_success

        view = (await world.client.get("/api/crcr/pr/9")).json()
        jobs = {b["repo"]: b["jobs"] for b in view["backends"]}
        assert [job["head_sha"] for job in jobs[FILTERED]] == [SOURCE_HEAD]
        # The docs-only head stays skipped; the matching one ran.
        assert [s["head_sha"] for s in view["skipped"]] == [DOCS_HEAD]


async def test_files_github_cannot_list_dispatch_to_every_backend(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.sandbox.add_pull(UPSTREAM, 9, head_sha=DOCS_HEAD)
    set_pull_files(relay.sandbox, UPSTREAM, 9, ["docs/index.md"])
    relay.sandbox.inject_fault("/repos/pytorch/pytorch/pulls/9/files", status=503)
    async with relay.instance() as world:
        _, answer = await open_pr(world, 9, DOCS_HEAD)

        assert FILTERED in answer["dispatched"]


async def test_a_closed_pr_and_a_push_are_never_judged_on_paths(
    opener: StoreOpener, tmp_path: Path, sandbox_app: SandboxApp, signing_key: SigningKey
) -> None:
    relay = Budgeted(opener, tmp_path, sandbox_app, signing_key)
    relay.sandbox.add_pull(UPSTREAM, 9, head_sha=DOCS_HEAD)
    set_pull_files(relay.sandbox, UPSTREAM, 9, ["docs/index.md"])
    async with relay.instance() as world:
        _, answer = await open_pr(world, 9, DOCS_HEAD, "closed")

        assert FILTERED in answer["dispatched"]
        assert not [c for c in relay.sandbox.calls() if c.path.endswith("/files")]
