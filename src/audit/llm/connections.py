"""The gateway's connections: one pool per event loop and endpoint, and the concurrency bound.

Both are per event loop (an ``asyncio`` object cannot be shared between loops): the sync verbs run
on the gateway's private loop, an async caller on its own. Each pool (:class:`audit.llm.backend.Pool`,
both routes) is sized to ``max_concurrency``, the number of slots the semaphore gives out, so a call
holding a slot always finds a connection to reuse rather than opening one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from audit.llm import backend
from audit.llm.keys import EndpointKeys
from audit.llm.settings import GatewaySettings


class Connections:
    """The pools and slots of one gateway, for its life (the running loop's closed by :meth:`aclose`)."""

    def __init__(self, settings: GatewaySettings, keys: EndpointKeys):
        self._settings = settings
        self._keys = keys
        self._pools: dict[tuple[asyncio.AbstractEventLoop, str], backend.Pool] = {}
        self._slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    def pool(self, endpoint: str, api_base: str) -> backend.Pool:
        """The endpoint's connection pool on this event loop (both routes; never re-sends on its own)."""
        key = (asyncio.get_running_loop(), endpoint)
        if key not in self._pools:
            self._pools[key] = backend.Pool(api_base, self._keys(endpoint), self._settings.deadline_s(endpoint),
                                            self._settings.max_concurrency, self._settings.max_reply_bytes)
        return self._pools[key]

    def slot(self) -> asyncio.Semaphore:
        """The semaphore that lets at most ``max_concurrency`` calls be in flight on this event loop."""
        loop = asyncio.get_running_loop()
        if loop not in self._slots:
            self._slots[loop] = asyncio.Semaphore(self._settings.max_concurrency)
        return self._slots[loop]

    async def listing(self, endpoint: str, api_base: str) -> Any:
        """The endpoint's model list (:func:`audit.llm.backend.listing`), on its own connections."""
        return await backend.listing(self.pool(endpoint, api_base), api_base, self._keys(endpoint),
                                     self._settings.max_reply_bytes)

    @property
    def opened(self) -> int:
        """TCP connections opened by the pools still open, for benchmarks and diagnostics."""
        return sum(pool.connections_opened for pool in self._pools.values())

    async def aclose(self) -> None:
        """Close the running loop's pools."""
        loop = asyncio.get_running_loop()
        for key in [k for k in self._pools if k[0] is loop]:
            await self._pools.pop(key).close()
