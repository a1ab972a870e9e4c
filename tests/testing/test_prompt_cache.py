"""The loopback server's prompt-cache mode reports what OpenRouter documents, over real HTTP.

Shape (OpenRouterTeam/docs, guides/best-practices/prompt-caching.mdx, "Usage object fields"):
``usage.prompt_tokens_details.cached_tokens`` (read from the cache) and ``cache_write_tokens``
(written to it), both parts of ``prompt_tokens``.
"""

from __future__ import annotations

import json
import urllib.request

from audit.testing.prompt_cache import PromptCache
from audit.testing.replies import TEST_API_KEY, chat_reply
from audit.testing.server import FakeOpenRouter

MARK = {"type": "ephemeral"}


def post(server: FakeOpenRouter, model: str, messages: list) -> dict:
    request = urllib.request.Request(f"{server.base_url}/chat/completions", method="POST",
                                     data=json.dumps({"model": model, "messages": messages}).encode(),
                                     headers={"Authorization": f"Bearer {TEST_API_KEY}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())["usage"]


def marked(text: str) -> list:
    return [{"type": "text", "text": text, "cache_control": MARK}]


def test_explicit_caching_writes_at_a_breakpoint_and_reads_it_back_later():
    with FakeOpenRouter(handler=PromptCache().wrap(lambda r: chat_reply("ok"))) as server:
        system = "S" * 400
        first = post(server, "anthropic/claude-sonnet-4", [{"role": "system", "content": marked(system)},
                                                           {"role": "user", "content": "q1"}])
        assert first["prompt_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 100}
        second = post(server, "anthropic/claude-sonnet-4", [{"role": "system", "content": marked(system)},
                                                            {"role": "user", "content": "q2"}])
        assert second["prompt_tokens_details"] == {"cached_tokens": 100, "cache_write_tokens": 0}
        assert second["prompt_tokens"] > 100
        unmarked = post(server, "anthropic/claude-sonnet-4", [{"role": "system", "content": system},
                                                              {"role": "user", "content": "q3"}])
        assert unmarked["prompt_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}


def test_automatic_caching_reads_a_repeated_prefix_without_marks():
    with FakeOpenRouter(handler=PromptCache().wrap(lambda r: chat_reply("ok"))) as server:
        system = {"role": "system", "content": "S" * 400}
        assert post(server, "openai/gpt-4.1", [system, {"role": "user", "content": "q1"}])[
            "prompt_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}
        assert post(server, "openai/gpt-4.1", [system, {"role": "user", "content": "q2"}])[
            "prompt_tokens_details"] == {"cached_tokens": 100, "cache_write_tokens": 0}
        # another model has a cache of its own
        assert post(server, "deepseek/deepseek-chat", [system, {"role": "user", "content": "q2"}])[
            "prompt_tokens_details"]["cached_tokens"] == 0
