"""Open the state store the settings name: Redis when a URL is set, else SQLite."""

from __future__ import annotations

from crcr.private_files import private_directory, private_file
from crcr.settings import Settings
from crcr.stores.state import StateStore, StateStoreUnavailable


async def open_state_store(settings: Settings) -> StateStore:
    """Open the configured state store.

    Redis connects lazily, so a relay can start while Redis is briefly down and report
    it on `/readyz`; SQLite creates its data directory and schema now.
    """
    if settings.redis_cluster and not settings.redis_url:
        raise StateStoreUnavailable("CRCR_REDIS_CLUSTER: needs CRCR_REDIS_URL (any node)")
    if settings.redis_url:
        from crcr.stores.redis.state import RedisStateStore

        return RedisStateStore.from_url(settings.redis_url, cluster=settings.redis_cluster)

    from crcr.stores.sqlite.state import SqliteStateStore

    path = settings.state_database_path
    try:
        private_directory(settings.data_dir)
        private_file(path)
    except OSError as exc:
        raise StateStoreUnavailable(f"cannot create data directory {path.parent}: {exc}") from exc
    return await SqliteStateStore.open(path)
