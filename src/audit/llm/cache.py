"""A persistent response cache, so re-running a sweep costs nothing.

litellm's disk cache is gone and its in-memory cache breaks on a hit, hence this one:
SQLite (one file, safe across the processes of a parallel sweep), keyed on everything
that determines a reply: route, base URL, model, provider routing, the prompt or
messages, sampling parameters and a sample index, so that repeated samples of the same
prompt stay distinct. Only successful replies are stored.

The file lives under the one cache root (``cache.dir``, default ``$AUDIT_CACHE_DIR`` or
``~/.cache/audit``), shared by every run and sweep job on a machine, so several processes
write it at once: each put is one short autocommit transaction, the write-ahead log (WAL)
lets readers go on while one writes, and a busy timeout makes a writer wait for the lock
instead of failing. WAL needs memory shared between the processes, so a cache on a
filesystem several machines share uses the rollback journal (``wal=False``) and the
filesystem's locks instead.

The cache only saves money, so it must never take the room a run's own files need: it stops
growing (one warning line; hits are still served) once its disk has less than ``min_free_bytes``
free. Without that reserve a full disk found the cache's write-ahead log holding every reply the
main file had no room for, and a resume after space was freed lost it again: the log was copied
into the main file at the checkpoint (twice the room) and grew back, filling the disk the
resumed run was writing to.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from audit.errors import UserError


def cache_key(request: dict[str, Any]) -> str:
    """Stable digest of a request description (canonical JSON, sorted keys)."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


T = TypeVar("T")

BUSY_TIMEOUT_S = 60.0
"""How long a write waits for another process's lock before failing (writes take milliseconds)."""

MIN_FREE_BYTES = 100_000_000
"""The room the cache leaves free on its disk (``gateway.cache.min_free_mb``): far above what a
write-ahead-log checkpoint needs (the log is checkpointed at about 4 MB and cut back to
``WAL_LIMIT_BYTES`` after)."""

WAL_LIMIT_BYTES = 4_000_000
"""The write-ahead log is truncated to this size after each checkpoint, so it never keeps the
high-water mark of a busy moment on disk."""


def print_warning(kind: str, line: str) -> None:
    """A cache warning (``kind``: ``off`` or ``full``) as one line on stderr."""
    print(line, file=sys.stderr, flush=True)


class ResponseCache:
    """Key-value store of reply records in one SQLite file."""

    def __init__(self, path: Path, *, wal: bool = True, busy_timeout_s: float = BUSY_TIMEOUT_S,
                 min_free_bytes: int = MIN_FREE_BYTES):
        """Open (creating) the cache file; one line naming the path when that is impossible
        (a read-only directory or file), before any call is made or anything is written."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self.failed: str | None = None
        """Why the cache was given up mid-run (then every get misses and every put is skipped)."""
        self.min_free_bytes = min_free_bytes
        self.full: str | None = None
        """Why the cache stopped growing (its disk is short of room): puts are skipped, gets still served."""
        self.warn: Callable[[str, str], None] = print_warning
        """Where the cache's warning goes, with its kind (``off`` or ``full``): stderr, or, in a worker
        process, its parent, which prints each kind once however many workers found it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, check_same_thread=False,
                                       isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            self._db.execute(f"PRAGMA journal_mode={'WAL' if wal else 'DELETE'}")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"gateway.cache.path={self.path}: cannot open the response cache ({exc}); make it "
                            "writable (or delete it if it is damaged), choose another cache.dir or gateway.cache.path, "
                            "or set gateway.cache.enabled=false") from None

    def _use(self, what: str, action: Callable[[], T], fallback: T) -> T:
        """Run one statement; on any failure after open give the cache up for the rest of the run.

        A full disk, damaged pages or another writer holding the lock past the busy timeout
        must not stop a run: the cache only saves money, so the run goes on uncached, after
        one line that names the file and the fix.
        """
        if self.failed is not None:
            return fallback
        try:
            with self._lock:
                return action()
        except (sqlite3.Error, ValueError) as exc:  # ValueError: a stored value that is not JSON
            self.failed = f"{what}: {exc}"
            self.warn("off", f"warning: response cache {self.path}: {what} failed ({exc}); caching is off for the "
                      "rest of this run. Free disk space, delete the file if it is damaged, or set "
                      "gateway.cache.enabled=false")
            return fallback

    def _has_room(self) -> bool:
        """Whether the cache's disk keeps its reserve; the first time it does not, one warning line
        and no more writes this run (the run's own files need the room more than the cache)."""
        if self.full is not None:
            return False
        try:
            stat = os.statvfs(self.path.parent)
        except OSError:
            return True  # no figure: the write itself will say
        free = stat.f_bavail * stat.f_frsize
        if free >= self.min_free_bytes:
            return True
        self.full = f"{free / 1e6:.1f} MB free on its disk, under gateway.cache.min_free_mb={self.min_free_bytes / 1e6:g}"
        self.warn("full", f"warning: response cache {self.path}: {self.full}; the cache is no longer written this "
                  "run (replies already in it are still used), so the run's own files keep the room. Free disk "
                  "space, or point cache.dir at another disk")
        return False

    def get(self, key: str) -> dict[str, Any] | None:
        def read() -> dict[str, Any] | None:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            return json.loads(row[0]) if row else None
        return self._use("read", read, None)

    def put(self, key: str, value: dict[str, Any]) -> None:
        if not self._has_room():
            return
        payload = json.dumps(value, ensure_ascii=False)
        self._use("write", lambda: self._db.execute(
            "INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, payload)), None)

    def delete(self, key: str) -> None:
        """Forget one reply (a caller found it unusable; see ``Gateway.forget``)."""
        self._use("delete", lambda: self._db.execute("DELETE FROM responses WHERE key = ?", (key,)), None)

    def close(self) -> None:
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:
                pass  # already given up or unreachable: nothing left to save
