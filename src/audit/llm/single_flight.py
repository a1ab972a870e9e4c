"""Identical requests in flight at once are sent once (single-flight), in one process and across them.

Requests with the same response-cache key on the same event loop are the same request: the first
(the leader) is sent, and the others await its reply instead of paying for it again (the ledger
counts them as ``shared``). The leader's failure reaches them too; a leader cancelled (Ctrl-C, a
spent budget) cancels them.

Across processes (the jobs of a sweep run at once by the warm launcher, or several runs sharing one
response cache) the leader also holds a lock named by the key in the cache's ``inflight/``
directory while it sends and stores the reply. A leader of another process that finds the lock held
waits for it, then asks the cache again: the reply is there (a replay, counted ``cached`` as any
reply an earlier job paid for) or, when the holder failed or died, it is not and this one sends
itself. A failed reply is never cached, and a dead process's ``flock`` goes with it, so a follower
never waits on a request nobody is sending. Without this, the jobs of a sweep at once each paid for
the requests they share (a benchmark's reference rollouts: once per job instead of once).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

from audit.llm.types import LLMResponse

POLL_S = 0.05
"""How often a request waiting on another process's identical one looks at its lock again: an
``flock`` cannot be awaited, and blocking on it would stop the event loop (every other call of the
run, and Ctrl-C) for as long as the other process sends. A reply takes seconds; 50 ms is noise."""


class SingleFlight:
    """The requests in flight, by event loop and cache key; across processes, by a lock per key in
    ``lock_dir`` (None: this process only, as for a run without a response cache to share)."""

    def __init__(self, lock_dir: Path | None = None) -> None:
        self._flights: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Future[LLMResponse]] = {}
        self.lock_dir = lock_dir

    def joined(self, key: str) -> asyncio.Future[LLMResponse] | None:
        """The reply to come of the identical request in flight on this loop, or None when there is none."""
        return self._flights.get((asyncio.get_running_loop(), key))

    def lead(self, key: str) -> None:
        """Mark the request with ``key`` in flight: later identical ones join it until it lands or fails."""
        loop = asyncio.get_running_loop()
        self._flights[(loop, key)] = loop.create_future()

    def land(self, key: str, response: LLMResponse) -> None:
        """Hand the leader's reply to every request that joined it."""
        self._flights.pop((asyncio.get_running_loop(), key)).set_result(response)

    def fail(self, key: str, exc: BaseException) -> None:
        """Pass the leader's failure to the requests that joined it (a cancelled leader cancels them)."""
        flight = self._flights.pop((asyncio.get_running_loop(), key))
        if isinstance(exc, Exception):
            flight.set_exception(exc)
            flight.exception()  # retrieved: no "exception never retrieved" warning when nobody joined
        else:
            flight.cancel()

    @contextlib.asynccontextmanager
    async def across_processes(self, key: str) -> AsyncIterator[None]:
        """Hold the lock of ``key`` shared with every process using the same cache, waiting (without
        blocking the loop) while another holds it. The caller asks the cache again inside: the
        reply of the process it waited for is there unless that one failed. Store the reply before
        leaving, so a process waiting next finds it."""
        if self.lock_dir is None:
            yield
            return
        fd = await _locked(self.lock_dir / f"{key}.lock")
        try:
            yield
        finally:
            _release(self.lock_dir / f"{key}.lock", fd)


async def _locked(path: Path) -> int | None:
    """An open descriptor holding the ``flock`` of ``path`` (created as needed), or None when the
    lock directory cannot be used (the request then goes uncoordinated, as without a cache)."""
    while True:
        try:
            fd = _open(path)
        except OSError:
            return None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(POLL_S)
            # The holder before this one removes the file on release: a lock taken on a removed
            # file excludes nobody who opens the path now, so take the path's current file instead.
            if _same_file(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except FileNotFoundError:  # the first request of this cache: its lock directory is not there yet
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _release(path: Path, fd: int | None) -> None:
    """Remove the lock file (one per key would pile up in the cache dir), then let go of the lock:
    a process waiting on the removed file sees it is gone and takes the path anew."""
    if fd is None:
        return
    with contextlib.suppress(OSError):
        path.unlink()
    os.close(fd)
