"""An embedded SQLite store of finished batches, so interrupted work resumes without recomputing.

Keys: ``config_key`` identifies everything that changes the numbers of a forward pass (weights
hash, backend, dtype, device, padding side, batch size, strategy); ``batch_key`` identifies the
batch's composition (its padded token rows, in order). A batch is committed as soon as it is
computed, so Ctrl-C or a kill loses at most the batch in flight.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


class BatchCache:
    """SQLite-backed map ``(config_key, batch_key) -> JSON payload``.

    Args:
        path: the database file (created with its parent directory if missing).

    Attributes:
        hits / misses: counts since this object was created.
    """

    def __init__(self, path: Path):
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS batches (config_key TEXT NOT NULL, batch_key TEXT NOT NULL, "
                         "payload TEXT NOT NULL, PRIMARY KEY (config_key, batch_key))")
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, config_key: str, batch_key: str) -> Any | None:
        """The stored payload, or ``None`` when this batch was never finished."""
        row = self._db.execute("SELECT payload FROM batches WHERE config_key=? AND batch_key=?",
                               (config_key, batch_key)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, config_key: str, batch_key: str, payload: Any) -> None:
        """Store and commit one finished batch."""
        self._db.execute("INSERT OR REPLACE INTO batches VALUES (?, ?, ?)",
                         (config_key, batch_key, json.dumps(payload)))
        self._db.commit()

    def count(self, config_key: str | None = None) -> int:
        """Number of stored batches (for one config, or all)."""
        if config_key is None:
            return self._db.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
        return self._db.execute("SELECT COUNT(*) FROM batches WHERE config_key=?", (config_key,)).fetchone()[0]

    def close(self) -> None:
        self._db.close()


class RecordingCache(BatchCache):
    """A :class:`BatchCache` that also keeps every batch stored through it in :attr:`new`.

    A Ray worker answers through one of these and ships :attr:`new` back, so the driver's store
    receives every batch even when the worker cannot reach the driver's file.

    Args:
        path: the store to read from and write through to, or ``None`` for a private in-memory one.
    """

    def __init__(self, path: Path | None):
        super().__init__(path if path is not None else Path(":memory:"))
        self.new: list[tuple[str, str, Any]] = []

    def put(self, config_key: str, batch_key: str, payload: Any) -> None:
        super().put(config_key, batch_key, payload)
        self.new.append((config_key, batch_key, payload))


def open_store(cache_dir: Path) -> BatchCache:
    """The batch store of ``cache_dir`` (``batches.sqlite``), created if missing."""
    return BatchCache(Path(cache_dir) / "batches.sqlite")
