"""The cost split: four parts and the cache's saving, priced per token, marked an estimate."""

from __future__ import annotations

import pytest

from audit.llm.prices import price_of, priced, split
from audit.usage import Usage

PRICE = {"input": 3e-6, "output": 15e-6, "cache_read": 0.3e-6, "cache_write": 3.75e-6}


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
    assert (out.priced_calls, out.estimated_calls) == (1, 1)
    assert out.cost == 0.01  # the billed figure stays the service's own


def test_a_cache_part_without_a_price_gets_no_split():
    usage = Usage(calls=1, prompt_tokens=2000, cache_write_tokens=300, cost=0.01)
    assert priced(usage, {"input": 3e-6, "output": 15e-6, "cache_read": 0.3e-6}) is None
    assert priced(Usage(calls=1, prompt_tokens=10, cost=0.01), {"input": 1e-6, "output": 2e-6}) is not None


def test_the_price_map_is_read_under_openrouter_ids():
    # litellm's map lists OpenAI's models without the vendor prefix OpenRouter ids carry
    price = price_of("openai/gpt-4o-mini")
    assert price is not None and price["input"] > 0 and price["cache_read"] < price["input"]
    assert price_of("openrouter/openai/gpt-4o-mini") == price
    assert price_of("nobody/no-such-model-anywhere") is None


def test_split_leaves_unknown_models_and_unbilled_calls_alone():
    usage = Usage(calls=1, prompt_tokens=2000, cached_prompt_tokens=1500, completion_tokens=10, cost=0.01)
    assert split(usage, "nobody/no-such-model", None) == usage
    assert split(Usage(calls=1, prompt_tokens=5), "openai/gpt-4o-mini") == Usage(calls=1, prompt_tokens=5)
    assert split(usage, "nobody/no-such-model", "openai/gpt-4o-mini").priced_calls == 1
