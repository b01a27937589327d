"""Choosing the live class's store: SqliteStore in a data directory, or RedisStore when REDIS_URL is
set (classroom/store.py is the interface both implement; this module sits above the three)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from classroom.store import ClassroomStore


def data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """MHA_DATA_DIR, else ~/.local/share/mha-visualizer if home is writable, else /tmp/mha-data."""
    if environ.get("MHA_DATA_DIR"):
        return Path(environ["MHA_DATA_DIR"])
    home_data = Path(environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "mha-visualizer"
    try:
        home_data.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.access(home_data, os.W_OK):
            return home_data
    except OSError:
        pass
    return Path("/tmp/mha-data")


def open_store(environ: Mapping[str, str] = os.environ) -> ClassroomStore:
    """RedisStore if REDIS_URL is set, else SqliteStore in data_dir(). Open one per process."""
    if environ.get("REDIS_URL"):
        from classroom.redis_store import RedisStore

        return RedisStore.from_url(environ["REDIS_URL"])
    from classroom.sqlite_store import SqliteStore

    return SqliteStore(data_dir(environ))
