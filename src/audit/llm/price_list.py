"""Where the gateway finds a model's price: litellm's map, else the endpoint's model list, fetched
once per run (per gateway) and shared by every call waiting for it.

The list (OpenRouter's ``GET /models``, :func:`audit.llm.prices.listed`) is kept in memory, not in
the run's response cache: prices change, and a resumed run should split its new calls at today's
price, not at the one its first session saw. It is fetched again only for a model the last list did
not name (OpenRouter lists every model it serves, so that is a model added since, or a server
such as the loopback one that lists only what it was asked for), at most once per model. A fetch
that fails, times out or returns no list leaves those calls unpriced: a price is a nicety, never a
reason for a call to fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from audit.llm import prices
from audit.llm.prices import Price


class PriceList:
    """Prices by endpoint and model, for the cost split and the estimates of cut-off calls."""

    def __init__(self) -> None:
        self._listed: dict[str, dict[str, Price | None]] = {}
        self._asked: set[tuple[str, str]] = set()
        self._locks: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Lock] = {}

    def known(self, endpoint: str, model: str) -> Price | None:
        """``model``'s price without waiting: litellm's map, else the list already fetched (a call
        being cancelled cannot wait for a fetch)."""
        return prices.mapped(model) or self._listed.get(endpoint, {}).get(model)

    async def price(self, endpoint: str, model: str, fetch: Callable[[], Awaitable[Any]], *,
                    served: str | None = None) -> Price | None:
        """``model``'s price on ``endpoint``: litellm's map under the id asked for, then under the one
        the server named (``served``), else the list, fetched (``fetch()``: parsed JSON or None) when
        no list fetched so far names the model."""
        if prices.mapped(model) is None and served and (price := prices.mapped(served)) is not None:
            return price
        if self._settled(endpoint, model):
            return self.known(endpoint, model)
        key = (asyncio.get_running_loop(), endpoint)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # one fetch at a time: the calls behind it find the model listed
            if not self._settled(endpoint, model):
                try:
                    listing = await fetch()
                except Exception:  # a price is a nicety: the call stays unpriced
                    listing = None
                self._listed[endpoint] = {**self._listed.get(endpoint, {}), **prices.listed(listing)}
                # marked only now: the calls that came meanwhile wait on the lock for this list
                self._asked.add((endpoint, model))
        return self.known(endpoint, model)

    def _settled(self, endpoint: str, model: str) -> bool:
        """Nothing left to fetch: litellm prices the model, a list named it, or a fetch for it was made."""
        return (prices.mapped(model) is not None or model in self._listed.get(endpoint, {})
                or (endpoint, model) in self._asked)
