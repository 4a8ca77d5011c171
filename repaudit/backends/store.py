"""An embedded SQLite store of finished batches, so interrupted work resumes without recomputing.

Keys: ``config_key`` identifies everything that changes the numbers of a forward pass (weights
hash, backend, dtype, device, padding side, batch size, strategy); ``batch_key`` identifies the
batch's composition (its padded token rows, in order). A batch is committed as soon as it is
computed, so Ctrl-C or a kill loses at most the batch in flight.

A store damaged on disk (truncated, overwritten, a garbage page) is never trusted: the first
SQLite error moves the file aside (``batches.sqlite.damaged-<time>``), says so in one line on
stderr, and work continues on a fresh store, so the batches are recomputed. A stored payload that is
not valid JSON is dropped the same way, row by row; its shape is checked by the backend that reads it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SCHEMA = ("CREATE TABLE IF NOT EXISTS batches (config_key TEXT NOT NULL, batch_key TEXT NOT NULL, "
           "payload TEXT NOT NULL, PRIMARY KEY (config_key, batch_key))")
#: scoring throughput measured by past runs, for ``--dry-run`` estimates
_SPEEDS = ("CREATE TABLE IF NOT EXISTS speeds (speed_key TEXT PRIMARY KEY, tokens INTEGER NOT NULL, "
           "seconds REAL NOT NULL)")


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


class BatchCache:
    """SQLite-backed map ``(config_key, batch_key) -> JSON payload``.

    Args:
        path: the database file (created with its parent directory if missing), or ``:memory:``.
        on_damage: called with one line when the store is found damaged and set aside
            (default: printed to stderr as ``warning: …``).

    Attributes:
        hits / misses: counts since this object was created.
        set_aside: where a damaged store was moved, if it was.
    """

    def __init__(self, path: Path, on_damage: Callable[[str], None] | None = None):
        self.path = Path(path) if str(path) != ":memory:" else path
        self.on_damage = on_damage or _warn
        self.set_aside: Path | None = None
        self.hits = 0
        self.misses = 0
        self._added = 0
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._connect()
        except sqlite3.DatabaseError as exc:
            self._damaged(exc)

    def _connect(self) -> None:
        self._db = sqlite3.connect(str(self.path), timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.execute(_SPEEDS)
        self._db.commit()
        self._db.execute("SELECT COUNT(*) FROM batches").fetchone()

    def _damaged(self, exc: Exception) -> None:
        """Move the damaged file aside and continue on a fresh one (see the module docstring)."""
        with contextlib.suppress(Exception):  # the handle may be half-open; nothing to keep from it
            self._db.close()
        if str(self.path) == ":memory:":
            raise exc
        target = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                p.replace(Path(str(target) + suffix))
        self.set_aside = target
        self.on_damage(f"batch store '{self.path}' is damaged ({str(exc).splitlines()[0]}); moved it to "
                       f"'{target}' and continuing with an empty store (finished batches are recomputed)")
        self._connect()

    def _run(self, sql: str, args: tuple = ()) -> list:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            self._damaged(exc)
            return self._db.execute(sql, args).fetchall()

    def get(self, config_key: str, batch_key: str) -> Any | None:
        """The stored payload, or ``None`` when this batch was never finished (or its row is unreadable)."""
        rows = self._run("SELECT payload FROM batches WHERE config_key=? AND batch_key=?", (config_key, batch_key))
        if not rows:
            self.misses += 1
            return None
        try:
            payload = json.loads(rows[0][0])
        except (ValueError, TypeError, RecursionError):
            self.drop(config_key, batch_key)
            self.misses += 1
            return None
        self.hits += 1
        return payload

    def get_checked(self, config_key: str, batch_key: str, valid: Callable[[Any], bool]) -> Any | None:
        """:meth:`get`, dropping (and returning ``None`` for) a payload that ``valid`` rejects or chokes on."""
        payload = self.get(config_key, batch_key)
        if payload is None:
            return None
        try:
            ok = bool(valid(payload))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            ok = False
        if not ok:
            self.drop(config_key, batch_key)
            return None
        return payload

    def drop(self, config_key: str, batch_key: str) -> None:
        """Forget one batch (its payload was unreadable or of the wrong shape)."""
        self._run("DELETE FROM batches WHERE config_key=? AND batch_key=?", (config_key, batch_key))
        self._db.commit()

    def put(self, config_key: str, batch_key: str, payload: Any) -> None:
        """Store and commit one finished batch."""
        try:
            self._db.execute("INSERT OR REPLACE INTO batches VALUES (?, ?, ?)",
                             (config_key, batch_key, json.dumps(payload)))
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            self._damaged(exc)
            self._db.execute("INSERT OR REPLACE INTO batches VALUES (?, ?, ?)",
                             (config_key, batch_key, json.dumps(payload)))
            self._db.commit()
        self._added += 1

    def add_speed(self, speed_key: str, tokens: int, seconds: float) -> None:
        """Add ``tokens`` computed in ``seconds`` of scoring to the measurements of ``speed_key``."""
        if tokens <= 0 or not seconds > 0:
            return
        self._run("INSERT INTO speeds VALUES (?, ?, ?) ON CONFLICT(speed_key) DO UPDATE SET "
                  "tokens = tokens + excluded.tokens, seconds = seconds + excluded.seconds",
                  (speed_key, int(tokens), float(seconds)))
        self._db.commit()

    def tokens_per_s(self, speed_key: str) -> float | None:
        """Measured scoring throughput for ``speed_key`` (all past runs pooled), or None if never measured."""
        rows = self._run("SELECT tokens, seconds FROM speeds WHERE speed_key=?", (speed_key,))
        if not rows or not isinstance(rows[0][1], (int, float)) or not rows[0][1] > 0:
            return None
        return float(rows[0][0]) / float(rows[0][1])

    @property
    def added(self) -> int:
        """Batches stored through this object (the work computed now)."""
        return self._added

    def count(self, config_key: str | None = None) -> int:
        """Number of stored batches (for one config, or all)."""
        if config_key is None:
            return self._run("SELECT COUNT(*) FROM batches")[0][0]
        return self._run("SELECT COUNT(*) FROM batches WHERE config_key=?", (config_key,))[0][0]

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


def pairs_shape(payload: Any, lengths: list[int]) -> bool:
    """``payload`` is one list per row, row ``i`` holding ``lengths[i]`` ``[logprob, is_greedy]`` pairs."""
    return isinstance(payload, list) and len(payload) == len(lengths) and all(
        isinstance(row, list) and len(row) == n and all(
            isinstance(x, list) and len(x) == 2 and isinstance(x[0], (int, float)) and not isinstance(x[0], bool)
            and isinstance(x[1], (bool, int)) for x in row) for row, n in zip(payload, lengths))


def stored_groups(payload, batch: list[list[int]], enc) -> list[dict[tuple, tuple[float, bool]]] | None:
    """A stored full-sequence batch (:meth:`repaudit.backends.hf.HFBackend.loglikelihood`) as per-group
    ``{continuation: (logprob, is_greedy)}``, or ``None`` when the payload does not have that shape or lacks a
    continuation of the batch (``batch``: groups of request indices; ``enc``: per request (context ids,
    continuation ids))."""
    try:
        stored = [{tuple(int(t) for t in c): (float(lp), bool(gr)) for c, lp, gr in grp} for grp in payload]
        if len(stored) != len(batch) or any(tuple(enc[m][1]) not in stored[j] for j, g in enumerate(batch) for m in g):
            return None
    except (TypeError, ValueError, OverflowError):
        return None
    return stored


def generations_shape(payload: Any, n: int) -> bool:
    """``payload`` is a list of ``n`` ``[text, generated tokens, finish reason]`` triples."""
    return isinstance(payload, list) and len(payload) == n and all(
        isinstance(g, list) and len(g) == 3 and isinstance(g[0], str) and isinstance(g[1], int)
        and not isinstance(g[1], bool) and g[1] >= 0 and isinstance(g[2], str) for g in payload)


def open_store(cache_dir: Path) -> BatchCache:
    """The batch store of ``cache_dir`` (``batches.sqlite``), created if missing."""
    return BatchCache(Path(cache_dir) / "batches.sqlite")
