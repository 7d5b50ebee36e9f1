"""Revocation: a moved stamp makes every instance re-read the allowlist (SPEC §12)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.relay.allowlist.test_source import RecordingContents

from crcr.relay.allowlist.location import FileLocation, UrlLocation, parse_location
from crcr.relay.allowlist.model import Level
from crcr.relay.allowlist.revocation import push_hook, touches_allowlist
from crcr.relay.allowlist.source import AllowlistSource
from crcr.sandbox.webhooks.pushes import branch_push
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

BLOB = "https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml"
KEY = ("pytorch/pytorch", ".github/allowlist.yml", "main")
BOTH = "L2:\n  - org/kept\n  - org/removed\n"
KEPT = "L2:\n  - org/kept\n"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StateStore]:
    sqlite_store = await SqliteStateStore.open(tmp_path / "state.db")
    yield sqlite_store
    await sqlite_store.close()


def instance(contents: RecordingContents, store: StateStore, memo: float = 0.0) -> AllowlistSource:
    """One relay instance's source: a GitHub blob, a TTL far longer than any test."""
    return AllowlistSource(
        parse_location(BLOB), store=store, ttl=900, fetch_contents=contents, stamp_memo=memo
    )


def push_touching(*paths: str, branch: str = "main") -> dict[str, Any]:
    payload = branch_push(branch)
    payload["commits"][-1]["modified"] = list(paths)
    return payload


async def test_an_announced_change_reaches_another_instance_before_its_ttl(
    store: StateStore,
) -> None:
    contents = RecordingContents({KEY: BOTH})
    announcer, other = instance(contents, store), instance(contents, store)
    assert (await other.get()).level_of("org/removed") == Level.L2

    contents.files[KEY] = KEPT
    await announcer.announce_change("cli")

    assert (await announcer.get()).entry("org/removed") is None
    assert (await other.get()).entry("org/removed") is None


async def test_the_other_instances_take_the_announcers_copy_without_fetching(
    store: StateStore,
) -> None:
    announcer_contents = RecordingContents({KEY: KEPT})
    other_contents = RecordingContents({KEY: BOTH})
    announcer, other = instance(announcer_contents, store), instance(other_contents, store)
    await other.get()
    await announcer.announce_change("push")

    assert (await other.get()).entry("org/removed") is None
    assert len(other_contents.calls) == 1  # its first load only


async def test_without_a_change_the_ttl_still_rules(store: StateStore) -> None:
    contents = RecordingContents({KEY: BOTH})
    source = instance(contents, store)
    await source.get()
    contents.files[KEY] = KEPT

    assert (await source.get()).entry("org/removed") is not None
    assert len(contents.calls) == 1


class CountingStore:
    """A store that counts stamp reads and delegates everything else."""

    def __init__(self, inner: StateStore) -> None:
        self.inner = inner
        self.stamp_reads = 0

    async def allowlist_stamp(self) -> int:
        self.stamp_reads += 1
        await asyncio.sleep(0.01)
        return await self.inner.allowlist_stamp()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_concurrent_lookups_share_one_stamp_read(store: StateStore) -> None:
    counting = CountingStore(store)
    source = instance(RecordingContents({KEY: BOTH}), counting, memo=60)  # type: ignore[arg-type]
    await source.get()
    reads = counting.stamp_reads

    await asyncio.gather(*(source.get() for _ in range(50)))

    assert counting.stamp_reads == reads  # within the memo: no read at all


async def test_lookups_after_the_memo_share_one_read(store: StateStore) -> None:
    counting = CountingStore(store)
    source = instance(RecordingContents({KEY: BOTH}), counting, memo=0)  # type: ignore[arg-type]
    await source.get()
    reads = counting.stamp_reads

    await asyncio.gather(*(source.get() for _ in range(50)))

    assert counting.stamp_reads == reads + 1


async def test_a_change_whose_source_fails_keeps_the_last_good_and_stops_asking(
    store: StateStore,
) -> None:
    contents = RecordingContents({KEY: BOTH})
    announcer, other = instance(contents, store), instance(contents, store)
    await other.get()
    contents.files[KEY] = "L2:\n  - not-a-repo\n"
    await announcer.announce_change("cli")
    fetched = len(contents.calls)

    for _ in range(5):
        assert (await other.get()).entry("org/removed") is not None
    assert len(contents.calls) == fetched + 1  # one try, then the retry delay


# --- which pushes announce a change ------------------------------------------------------


def test_a_push_to_the_default_branch_touching_the_blob_is_a_change() -> None:
    location = parse_location(BLOB)
    assert touches_allowlist(push_touching(".github/allowlist.yml"), location, "pytorch/pytorch")
    assert touches_allowlist(push_touching(".github/allowlist.yml"), location, "PyTorch/PyTorch")


@pytest.mark.parametrize(
    "payload",
    [
        push_touching("torch/nn.py"),
        push_touching(".github/allowlist.yml", branch="release/2.6"),
        push_touching("docs/.github/allowlist.yml"),
        {"ref": "refs/heads/main"},
    ],
    ids=["other-files", "other-branch", "same-name-elsewhere", "no-repository"],
)
def test_other_pushes_are_not_a_change(payload: dict[str, Any]) -> None:
    assert not touches_allowlist(payload, parse_location(BLOB), "pytorch/pytorch")


def test_a_blob_in_another_repository_is_never_changed_by_an_upstream_push() -> None:
    location = parse_location("https://github.com/pytorch/test-infra/blob/main/allowlist.yml")
    assert not touches_allowlist(push_touching("allowlist.yml"), location, "pytorch/pytorch")


def test_file_and_url_sources_match_a_pushed_file_of_the_same_name() -> None:
    payload = push_touching(".github/crcr-allowlist.yml")
    file = FileLocation(Path("/etc/crcr/crcr-allowlist.yml"))
    url = UrlLocation("https://example.org/raw/main/.github/crcr-allowlist.yml")
    assert touches_allowlist(payload, file, "pytorch/pytorch")
    assert touches_allowlist(payload, url, "pytorch/pytorch")
    assert not touches_allowlist(payload, FileLocation(Path("/etc/a.yml")), "pytorch/pytorch")


async def test_the_push_hook_announces_only_changes(store: StateStore) -> None:
    source = instance(RecordingContents({KEY: BOTH}), store)
    hook = push_hook(source, "pytorch/pytorch")

    assert await hook(push_touching("torch/nn.py")) is False
    assert await store.allowlist_stamp() == 0
    assert await hook(push_touching(".github/allowlist.yml")) is True
    assert await store.allowlist_stamp() == 1
