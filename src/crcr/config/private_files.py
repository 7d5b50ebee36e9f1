"""Data files only their owner can read: the embedded stores hold installation tokens.

The SQLite state store caches GitHub App installation tokens, and the results store
holds every downstream's results; a file the default umask left world-readable (0644)
hands them to any local account. SQLite creates its `-wal` and `-shm` files with the
database file's permissions, so making the database file 0600 before SQLite opens it
covers them too.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def private_directory(path: Path) -> None:
    """Create `path` (and its parents) if needed, and make it the owner's alone."""
    path.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o777 != DIRECTORY_MODE:
        path.chmod(DIRECTORY_MODE)


def private_file(path: Path) -> None:
    """Create `path` empty if it does not exist, and make it readable by its owner only.

    Its directory is created owner-only if missing; an existing one is left as it is
    (it may be shared, e.g. a results store given by `CRCR_DATABASE_URL`).
    """
    if not path.parent.exists():
        path.parent.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE)
    os.close(descriptor)
    if path.stat().st_mode & 0o777 != FILE_MODE:
        path.chmod(FILE_MODE)
