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
        """Stop the loop and its thread (a no-op when no sync call started one)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            assert self._thread is not None
            self._thread.join(timeout=STOP_WAIT_S)
            self._loop = None
