"""Identical requests in flight at once are sent once (single-flight).

Requests with the same response-cache key on the same event loop are the same request: the first
(the leader) is sent, and the others await its reply instead of paying for it again (the ledger
counts them as ``shared``). The leader's failure reaches them too; a leader cancelled (Ctrl-C, a
spent budget) cancels them.
"""

from __future__ import annotations

import asyncio

from audit.llm.types import LLMResponse


class SingleFlight:
    """The requests in flight, by event loop and cache key."""

    def __init__(self) -> None:
        self._flights: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Future[LLMResponse]] = {}

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
