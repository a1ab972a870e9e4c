"""The cost split of a model litellm's map lacks, priced from the endpoint's model list over real HTTP.

The loopback server answers ``GET /api/v1/models`` in the shape OpenRouterTeam/docs
``guides/overview/models.mdx`` documents ("Pricing Object": ``prompt``, ``completion``,
``input_cache_read``, ``input_cache_write``, USD per token as decimal strings; here 1e-6, 2e-6, 1e-7
and 1.25e-6), and reports prompt-cache reads and writes as its prompt-caching guide does
(:mod:`audit.testing.prompt_cache`).
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.testing.prompt_cache import PromptCache
from audit.testing.replies import chat_reply
from audit.testing.server import FakeOpenRouter

KEY = "sk-or-v1-fake-test-key-list-prices-0123"
CLAUDE = "anthropic/claude-sonnet-4"  # the shipped auditor: not in litellm's price map
SYSTEM = "You audit. " * 200


def make_gateway(server: FakeOpenRouter, tmp_path: Path) -> Gateway:
    settings = GatewaySettings(api_base=server.base_url, timeout_s=10.0, max_retries=0, backoff_initial_s=0.01,
                               backoff_max_s=0.02, cache_enabled=False)
    return Gateway(settings, KEY, usage_path=tmp_path / "usage.json", rng=random.Random(0))


def turns(n: int) -> list[list[dict]]:
    """``n`` requests that each repeat the one before and add a turn (the auditor's full context)."""
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    out = []
    for i in range(n):
        messages = [*messages, {"role": "user", "content": f"turn {i}"}]
        out.append(list(messages))
        messages.append({"role": "assistant", "content": "ok"})
    return out


def test_a_model_litellm_lacks_is_split_at_the_lists_prices_fetched_once(fake_openrouter, tmp_path):
    fake_openrouter.handler = PromptCache().wrap(lambda request: chat_reply("ok"))
    gateway = make_gateway(fake_openrouter, tmp_path)

    async def run():
        try:
            first, second = [await gateway.achat(CLAUDE, messages, cache_prefix=(len(messages) - 1,))
                             for messages in turns(2)]
            # calls finishing at once share the one list already fetched
            await asyncio.gather(*(gateway.achat(CLAUDE, [{"role": "user", "content": f"q{i}"}]) for i in range(8)))
            gateway.write_usage()
            return first, second
        finally:
            await gateway.aclose()

    first, second = asyncio.run(run())
    assert fake_openrouter.listings == 1
    read, written = second.usage.cached_prompt_tokens, second.usage.cache_write_tokens
    assert read > 0 and first.usage.cache_write_tokens > 0
    uncached = second.usage.prompt_tokens - read - written
    assert second.usage.input_cost == pytest.approx(uncached * 1e-6)
    assert second.usage.cache_read_cost == pytest.approx(read * 1e-7)
    assert second.usage.cache_write_cost == pytest.approx(written * 1.25e-6)
    assert second.usage.output_cost == pytest.approx(second.usage.completion_tokens * 2e-6)
    assert second.usage.cache_saving == pytest.approx(read * 9e-7 - written * 0.25e-6)
    usage = json.loads((tmp_path / "usage.json").read_text())
    assert all(c["list_priced_calls"] == c["estimated_calls"] == c["priced_calls"] == 1 for c in usage["calls"])
    assert usage["totals"]["list_priced_calls"] == 10 and usage["by_model"][CLAUDE]["list_priced_calls"] == 10


def test_litellms_map_comes_first_and_needs_no_list(fake_openrouter, tmp_path):
    fake_openrouter.default_reply = chat_reply("ok")
    gateway = make_gateway(fake_openrouter, tmp_path)
    try:
        reply = gateway.chat("openai/gpt-4.1", [{"role": "user", "content": "hi"}])
    finally:
        gateway.close()
    assert (reply.usage.priced_calls, reply.usage.list_priced_calls) == (1, 0)
    assert reply.usage.input_cost == pytest.approx(reply.usage.prompt_tokens * 2e-6)  # litellm's gpt-4.1 price
    assert fake_openrouter.listings == 0


def test_a_model_the_list_did_not_name_fetches_it_once_more(fake_openrouter, tmp_path):
    """OpenRouter lists every model it serves; the loopback server only those asked for so far, as a
    model added since the list was fetched would be: one more fetch, and only one, for that model."""
    fake_openrouter.default_reply = chat_reply("ok")
    gateway = make_gateway(fake_openrouter, tmp_path)
    try:
        replies = [gateway.chat(model, [{"role": "user", "content": f"hi {i}"}])
                   for i, model in enumerate([CLAUDE, "x/judge", "x/judge", CLAUDE])]
    finally:
        gateway.close()
    assert fake_openrouter.listings == 2
    assert all(r.usage.list_priced_calls == 1 for r in replies)


@pytest.mark.parametrize("status", [401, 500])
def test_a_failed_list_leaves_calls_unpriced_and_never_writes_the_key(fake_openrouter, tmp_path, status):
    """The server's error body echoes the key it was sent; nothing of it reaches a file."""
    fake_openrouter.models_status = status
    fake_openrouter.default_reply = chat_reply("ok")
    gateway = make_gateway(fake_openrouter, tmp_path)
    try:
        replies = [gateway.chat(CLAUDE, [{"role": "user", "content": f"hi {i}"}]) for i in range(3)]
        gateway.write_usage()
    finally:
        gateway.close()
    assert all(r.text == "ok" and r.usage.cost > 0 and r.usage.priced_calls == 0 for r in replies)
    totals = json.loads((tmp_path / "usage.json").read_text())["totals"]
    assert totals["calls"] == 3 and totals["priced_calls"] == 0 and totals["errors"] == 0
    assert not any(KEY in path.read_text() for path in tmp_path.iterdir() if path.is_file())
