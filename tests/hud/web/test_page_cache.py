"""Live pages are drawn once per (URL, store version, minute), and never served stale."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.hud.web import seed
from tests.hud.web.harness import TOKEN, asgi_client

from crcr.hud.web.page_cache import PageCache

NOON = datetime(2026, 11, 25, 12, 0, 30, tzinfo=UTC)


def test_a_page_is_kept_for_its_version_and_minute_only() -> None:
    cache = PageCache()
    key = cache.key("/crcr?", "v1", NOON)
    cache.put(key, "<html>v1</html>")

    assert cache.get(cache.key("/crcr?", "v1", NOON + timedelta(seconds=29))) == "<html>v1</html>"
    assert cache.get(cache.key("/crcr?", "v1", NOON + timedelta(seconds=30))) is None
    assert cache.get(cache.key("/crcr?", "v2", NOON)) is None
    assert cache.get(cache.key("/crcr?window=30", "v1", NOON)) is None


def test_the_least_recently_used_page_goes_first() -> None:
    cache = PageCache(size=2)
    first, second, third = (cache.key(f"/crcr/pr/{n}?", "v", NOON) for n in (1, 2, 3))
    cache.put(first, "1")
    cache.put(second, "2")
    assert cache.get(first) == "1"  # now the most recently used
    cache.put(third, "3")

    assert cache.get(second) is None
    assert (cache.get(first), cache.get(third)) == ("1", "3")


async def test_a_result_written_shows_on_the_next_request(tmp_path: Path) -> None:
    async with asgi_client(tmp_path / "hud.db") as client:
        before = await client.get("/crcr/pr/101")
        again = await client.get("/crcr/pr/101")
        result = seed.Result("acme/latecomer", "L2", 101, seed.SHA_101, "build", "success")
        body = seed.result_body(result, seed.Clock().now)
        headers = {"x-hud-internal-bot": TOKEN}
        assert (await client.post("/api/crcr/results", json=body, headers=headers)).is_success
        after = await client.get("/crcr/pr/101")

    assert again.text == before.text
    assert "acme/latecomer" not in before.text
    assert 'data-repo="acme/latecomer"' in after.text
