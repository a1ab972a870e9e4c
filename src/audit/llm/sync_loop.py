"""The private event loop behind the gateway's synchronous verbs (``chat``, ``complete``, ``close``).

litellm's pooled clients and the gateway's connection pools are bound to the event loop that
made them: a sync call that ran each coroutine on a fresh loop (``asyncio.run``) would leave them
bound to a closed one. So every sync call runs on one loop, kept on a daemon thread for the life
of the gateway and stopped by :meth:`SyncLoop.stop`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
STOP_WAIT_S = 5.0
"""How long :meth:`SyncLoop.stop` waits for the loop's thread to end."""


class SyncLoop:
    """One event loop on its own thread, started on first use."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to its end on the loop and return its result (or raise its exception)."""
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="gateway-loop", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def stop(self) -> None:
        """Close the async generators still open on the loop, then stop and close it (a no-op when no sync
        call started one), as ``asyncio.run`` ends its loop. A generator left open (a stream whose reading
        stopped early, held by an exception's traceback) would otherwise be closed by the collector later
        as a task on the stopped loop, never run: "Task was destroyed but it is pending!" at exit."""
        if self._loop is not None:
            loop, self._loop = self._loop, None
            try:
                asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop).result(timeout=STOP_WAIT_S)
            except TimeoutError:
                pass  # a generator that will not close holds no exit: the loop is stopped all the same
            loop.call_soon_threadsafe(loop.stop)
            assert self._thread is not None
            self._thread.join(timeout=STOP_WAIT_S)
            if not self._thread.is_alive():
                loop.close()
