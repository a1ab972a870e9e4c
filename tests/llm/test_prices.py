"""The cost split: four parts and the cache's saving, priced per token from litellm's map or, for a
model the map lacks, OpenRouter's model list, and marked an estimate saying which list priced it."""

from __future__ import annotations

import asyncio

import pytest

from audit.llm.price_list import PriceList
from audit.llm.prices import LITELLM, OPENROUTER, Price, listed, mapped, priced, split
from audit.record.usage import Usage

PRICE = Price(3e-6, 15e-6, 0.3e-6, 3.75e-6)

LISTING = {"data": [
    {"id": "anthropic/claude-sonnet-4", "pricing": {"prompt": "0.000003", "completion": "0.000015", "request": "0",
                                                    "image": "0.0048", "web_search": "0", "internal_reasoning": "0",
                                                    "input_cache_read": "0.0000003", "input_cache_write": "0.00000375"}},
    {"id": "a/no-cache", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
    {"id": "a/unreadable", "pricing": {"prompt": "varies", "completion": "0.000002"}},
    {"id": "a/negative", "pricing": {"prompt": "-1", "completion": "-1"}},
    {"id": "a/no-pricing"},
    {"name": "no id"}, "not an object"],
    "total_count": 7, "links": {"next": None}}
"""``GET /models`` in the shape of OpenRouterTeam/docs ``guides/overview/models.mdx`` ("Models API
Standard", "Pricing Object": USD per token as decimal strings, the cache prices among them), with
the damaged entries a tolerant reader must survive."""


def test_the_four_parts_and_the_saving():
    usage = Usage(calls=1, prompt_tokens=2000, cached_prompt_tokens=1500, cache_write_tokens=300, completion_tokens=100,
                  cost=0.01)
    out = priced(usage, PRICE)
    assert out is not None
    assert out.input_cost == pytest.approx(200 * 3e-6)
    assert out.cache_read_cost == pytest.approx(1500 * 0.3e-6)
    assert out.cache_write_cost == pytest.approx(300 * 3.75e-6)
    assert out.output_cost == pytest.approx(100 * 15e-6)
    # reading 1,500 tokens saved 2.7e-6 each; writing 300 cost 0.75e-6 each more than plain input
    assert out.cache_saving == pytest.approx(1500 * 2.7e-6 - 300 * 0.75e-6)
    assert (out.priced_calls, out.estimated_calls, out.list_priced_calls) == (1, 1, 0)
    assert out.cost == 0.01  # the billed figure stays the service's own


def test_a_cache_part_without_a_price_gets_no_split():
    usage = Usage(calls=1, prompt_tokens=2000, cache_write_tokens=300, cost=0.01)
    assert priced(usage, Price(3e-6, 15e-6, cache_read=0.3e-6)) is None
    assert priced(Usage(calls=1, prompt_tokens=10, cost=0.01), Price(1e-6, 2e-6)) is not None


def test_the_price_map_is_read_under_openrouter_ids():
    # litellm's map lists OpenAI's models without the vendor prefix OpenRouter ids carry
    price = mapped("openai/gpt-4o-mini")
    assert price is not None and price.input > 0 and price.cache_read is not None and price.cache_read < price.input
    assert price.source == LITELLM and mapped("openrouter/openai/gpt-4o-mini") == price
    assert mapped("nobody/no-such-model-anywhere") is None


def test_split_leaves_unpriced_and_unbilled_calls_alone():
    usage = Usage(calls=1, prompt_tokens=2000, cached_prompt_tokens=1500, completion_tokens=10, cost=0.01)
    assert split(usage, None) == usage
    assert split(Usage(calls=1, prompt_tokens=5), PRICE) == Usage(calls=1, prompt_tokens=5)
    assert split(usage, PRICE).priced_calls == 1


def test_the_documented_model_list_is_read_with_its_cache_prices():
    found = listed(LISTING)
    assert found["anthropic/claude-sonnet-4"] == Price(3e-6, 15e-6, 3e-7, 3.75e-6, OPENROUTER)
    assert found["a/no-cache"] == Price(1e-6, 2e-6, None, None, OPENROUTER)  # cache parts unpriced, not free
    # an unreadable or negative price is no price; an entry without one is listed as unpriced
    assert found["a/unreadable"] is None and found["a/negative"] is None and found["a/no-pricing"] is None
    assert set(found) == {"anthropic/claude-sonnet-4", "a/no-cache", "a/unreadable", "a/negative", "a/no-pricing"}
    assert listed(None) == {} and listed({"error": "nope"}) == {} and listed([1, 2]) == {}
    assert listed({"object": "list", "data": [{"id": "local"}]}) == {"local": None}  # llama.cpp lists no price


def test_a_list_price_splits_a_call_and_says_where_it_came_from():
    usage = Usage(calls=1, prompt_tokens=2000, cached_prompt_tokens=1500, completion_tokens=100, cost=0.01)
    out = split(usage, listed(LISTING)["anthropic/claude-sonnet-4"])
    assert (out.priced_calls, out.estimated_calls, out.list_priced_calls) == (1, 1, 1)
    assert out.cache_saving == pytest.approx(1500 * (3e-6 - 3e-7))
    assert (out + split(usage, PRICE)).list_priced_calls == 1  # a sum keeps the count apart


def test_the_price_list_is_fetched_once_and_again_only_for_a_model_it_did_not_name():
    fetched: list[int] = []

    async def fetch():
        fetched.append(1)
        await asyncio.sleep(0.01)
        return LISTING

    async def run() -> list[Price | None]:
        prices = PriceList()
        many = await asyncio.gather(*(prices.price("openrouter", "anthropic/claude-sonnet-4", fetch) for _ in range(20)))
        assert len(fetched) == 1  # twenty calls at once wait for one fetch
        assert await prices.price("openrouter", "a/no-cache", fetch) is not None and len(fetched) == 1
        assert await prices.price("openrouter", "a/new-model", fetch) is None and len(fetched) == 2
        assert await prices.price("openrouter", "a/new-model", fetch) is None and len(fetched) == 2  # once per model
        assert await prices.price("openrouter", "openai/gpt-4o-mini", fetch) == mapped("openai/gpt-4o-mini")
        assert len(fetched) == 2  # litellm's map needs no list
        assert prices.known("openrouter", "anthropic/claude-sonnet-4") == many[0]
        assert prices.known("local", "anthropic/claude-sonnet-4") is None  # lists are per endpoint
        return many

    assert set(asyncio.run(run())) == {listed(LISTING)["anthropic/claude-sonnet-4"]}


def test_a_failed_fetch_leaves_the_call_unpriced():
    async def broken():
        raise ConnectionError("no route to host")

    async def run() -> None:
        prices = PriceList()
        assert await prices.price("openrouter", "anthropic/claude-sonnet-4", broken) is None
        assert prices.known("openrouter", "anthropic/claude-sonnet-4") is None

    asyncio.run(run())


def test_the_served_id_is_looked_up_in_litellms_map_before_the_list():
    async def never():
        raise AssertionError("litellm's map priced it: no list needed")

    async def run() -> Price | None:
        return await PriceList().price("openrouter", "nobody/alias", never, served="openai/gpt-4o-mini")

    assert asyncio.run(run()) == mapped("openai/gpt-4o-mini")
