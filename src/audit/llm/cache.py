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
"""

from __future__ import annotations

import hashlib
import json
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


class ResponseCache:
    """Key-value store of reply records in one SQLite file."""

    def __init__(self, path: Path, *, wal: bool = True, busy_timeout_s: float = BUSY_TIMEOUT_S):
        """Open (creating) the cache file; one line naming the path when that is impossible
        (a read-only directory or file), before any call is made or anything is written."""
        self.path = Path(path)
        self._lock = threading.Lock()
        self.failed: str | None = None
        """Why the cache was given up mid-run (then every get misses and every put is skipped)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, check_same_thread=False,
                                       isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            self._db.execute(f"PRAGMA journal_mode={'WAL' if wal else 'DELETE'}")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"gateway.cache.path={self.path}: cannot open the response cache ({exc}); make it "
                            "writable, choose another cache.dir or gateway.cache.path, or set "
                            "gateway.cache.enabled=false") from None

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
            print(f"warning: response cache {self.path}: {what} failed ({exc}); caching is off for the rest of "
                  "this run. Free disk space, delete the file if it is damaged, or set gateway.cache.enabled=false",
                  file=sys.stderr, flush=True)
            return fallback

    def get(self, key: str) -> dict[str, Any] | None:
        def read() -> dict[str, Any] | None:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            return json.loads(row[0]) if row else None
        return self._use("read", read, None)

    def put(self, key: str, value: dict[str, Any]) -> None:
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
