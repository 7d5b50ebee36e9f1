"""Redis connections whose commands are packed by hiredis, in C.

redis-py's asyncio client packs every argument of every command in Python (encode,
length, join); its synchronous client has a hiredis packer, the asyncio one does not.
A callback's two round trips carry ~35 arguments (a job record is a hash of JSON
fields), and packing them was the relay's largest single cost after the HUD write.
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio import BlockingConnectionPool
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)


class HiredisPacking(AbstractConnection):
    """Pack with `hiredis.pack_command`; what it refuses goes to redis-py's packer."""

    def pack_command(self, *args: Any) -> list[bytes]:
        command = args[0]
        if isinstance(command, str):
            command = command.encode()
        # As redis-py does: a command name such as "CONFIG GET" is sent as two words.
        if b" " in command:
            args = (*command.split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:  # e.g. a bool: redis-py raises its own clear error for it
            return super().pack_command(*args)


class PackedConnection(HiredisPacking, Connection):
    """TCP."""


class PackedSSLConnection(HiredisPacking, SSLConnection):
    """TLS (`rediss://`)."""


class PackedUnixConnection(HiredisPacking, UnixDomainSocketConnection):
    """Unix socket (`unix://`)."""


_PACKED: dict[type[AbstractConnection], type[AbstractConnection]] = {
    Connection: PackedConnection,
    SSLConnection: PackedSSLConnection,
    UnixDomainSocketConnection: PackedUnixConnection,
}


def pack_with_hiredis(pool: BlockingConnectionPool) -> BlockingConnectionPool:
    """Make `pool` open connections that pack with hiredis (other classes are left alone)."""
    pool.connection_class = _PACKED.get(pool.connection_class, pool.connection_class)
    return pool
