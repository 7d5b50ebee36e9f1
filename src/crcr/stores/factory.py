"""Open the state store the settings name: Redis when a URL is set, else SQLite."""

from __future__ import annotations

import logging

from crcr.config.private_files import private_directory, private_file
from crcr.config.settings import Settings
from crcr.stores.state import StateStore, StateStoreUnavailable

log = logging.getLogger(__name__)


async def open_state_store(settings: Settings) -> StateStore:
    """Open the configured state store.

    Both upgrade older data to this crcr's schema and raise `SchemaTooNew` for newer
    (stores/schema.py). A relay may start while Redis is briefly down and report it on
    `/readyz`: its schema is then checked at the next start. SQLite creates its data
    directory and schema now.
    """
    if settings.redis_cluster and not settings.redis_url:
        raise StateStoreUnavailable("CRCR_REDIS_CLUSTER: needs CRCR_REDIS_URL (any node)")
    if settings.redis_url:
        from crcr.stores.redis.state import RedisStateStore

        store = RedisStateStore.from_url(
            settings.redis_url, prefix=settings.redis_prefix, cluster=settings.redis_cluster
        )
        try:
            await store.connect()
            await store.upgrade_schema()
        except StateStoreUnavailable as exc:
            log.warning(
                "state store unreachable at start-up; serving anyway (/readyz says so), its "
                "schema is checked at the next start: %s",
                exc,
            )
        except BaseException:
            await store.close()
            raise
        return store

    from crcr.stores.sqlite.state import SqliteStateStore

    path = settings.state_database_path
    try:
        private_directory(settings.data_dir)
        private_file(path)
    except OSError as exc:
        raise StateStoreUnavailable(f"cannot create data directory {path.parent}: {exc}") from exc
    return await SqliteStateStore.open(path)
