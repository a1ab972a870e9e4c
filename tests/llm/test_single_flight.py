"""Single-flight (audit.llm.single_flight): what a request that joins an identical one in flight gets."""

from __future__ import annotations

import asyncio

import pytest

from audit.llm.single_flight import SingleFlight
from audit.llm.types import GatewayError, LLMResponse
from audit.record.usage import Usage

REPLY = LLMResponse(text="one answer", finish_reason="stop", usage=Usage(calls=1), model="m/x")


def test_joiners_get_the_leaders_reply_and_a_landed_flight_is_gone():
    flights = SingleFlight()

    async def run() -> list:
        assert flights.joined("k") is None
        flights.lead("k")
        joiners = [asyncio.ensure_future(asyncio.shield(flights.joined("k"))) for _ in range(3)]
        assert flights.joined("other") is None  # another request's key joins nothing
        flights.land("k", REPLY)
        return [await j for j in joiners] + [flights.joined("k")]

    assert asyncio.run(run()) == [REPLY, REPLY, REPLY, None]


def test_a_leaders_failure_reaches_its_joiners_and_its_cancellation_cancels_them():
    flights = SingleFlight()

    async def run() -> None:
        flights.lead("k")
        joined = flights.joined("k")
        flights.fail("k", GatewayError("server", "boom"))
        with pytest.raises(GatewayError, match="boom"):
            await joined
        flights.lead("k")
        joined = flights.joined("k")
        flights.fail("k", asyncio.CancelledError())
        assert joined.cancelled() and flights.joined("k") is None

    asyncio.run(run())


def test_a_flight_is_joined_only_on_its_own_event_loop():
    """The sync verbs run on the gateway's private loop, an async caller on its own: a future of one
    loop cannot be awaited on another, so the same key on two loops is two flights."""
    flights = SingleFlight()

    async def lead() -> None:
        flights.lead("k")

    async def look() -> object:
        return flights.joined("k")

    asyncio.run(lead())
    assert asyncio.run(look()) is None
