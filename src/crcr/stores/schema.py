"""Schema versions: the layout of each store's data that this crcr writes, and refusing newer.

A store's data carries the version of its layout (SQLite: `PRAGMA user_version`; Redis:
the key `<prefix>{schema}`; the results store: Alembic's revision). Opening a store
upgrades older data in place; data written by a newer crcr is refused with one line
naming both versions, because an older crcr would misread it or write a layout the
newer one no longer reads. Data from before versions existed counts as version 1.
"""

from __future__ import annotations

from crcr import __version__

SQLITE_STATE_SCHEMA = 1
"""1: the first layout (records, rate_hits, queue_items, deadlines)."""

REDIS_STATE_SCHEMA = 2
"""1: unversioned, one deadlines set; 2: job records and deadlines in 32 slot buckets."""


class SchemaTooNew(Exception):
    """The data was written by a newer crcr; this one stops rather than touch it."""

    def __init__(self, store: str, found: object, known: object) -> None:
        super().__init__(
            f"{store}: its data has schema version {found}, written by a newer crcr; this"
            f" crcr ({__version__}) reads schema version {known} at most. Run the newer"
            " crcr, or restore the backup taken before it upgraded the data."
        )
