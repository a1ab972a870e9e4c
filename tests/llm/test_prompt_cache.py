"""Cache breakpoints go where OpenRouter documents them, for the providers that take them only."""

from __future__ import annotations

from audit.llm.gateway import Gateway
from audit.llm.prompt_cache import BREAKPOINT, MAX_BREAKPOINTS, takes_breakpoints, with_breakpoints
from audit.llm.settings import GatewaySettings
from audit.testing.replies import TEST_API_KEY, chat_reply

MESSAGES = [{"role": "system", "content": "stable"}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]


def test_anthropic_and_gemini_get_a_text_part_marked_ephemeral():
    for model in ("anthropic/claude-sonnet-4", "google/gemini-2.5-pro"):
        assert takes_breakpoints(model)
        marked = with_breakpoints(model, MESSAGES, (0, -1))
        assert marked[0]["content"] == [{"type": "text", "text": "stable", "cache_control": BREAKPOINT}]
        assert marked[3]["content"] == [{"type": "text", "text": "c", "cache_control": BREAKPOINT}]
        assert marked[1:3] == MESSAGES[1:3]
    assert MESSAGES[0]["content"] == "stable"  # the caller's messages are not changed


def test_automatic_caching_providers_get_no_marks():
    for model in ("openai/gpt-4.1", "deepseek/deepseek-chat", "test/auditor", "local/smollm2"):
        assert not takes_breakpoints(model)
        assert with_breakpoints(model, MESSAGES, (0, -1)) == MESSAGES


def test_at_most_four_breakpoints_the_latest_kept_and_parts_marked_on_their_last():
    parts = [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}]
    marked = with_breakpoints("anthropic/claude-sonnet-4", MESSAGES * 2 + parts, range(9))
    assert [i for i, m in enumerate(marked) if isinstance(m["content"], list) and "cache_control" in
            m["content"][-1]] == list(range(9 - MAX_BREAKPOINTS, 9))
    assert marked[8]["content"] == [{"type": "text", "text": "x"}, {"type": "text", "text": "y", "cache_control": BREAKPOINT}]


def test_marks_do_not_change_a_request_s_cache_identity(fake_openrouter, tmp_path):
    """The marks reach the wire, but the response cache keys the unmarked request: a run made before
    breakpoints existed (or without them) is served from the same entries."""
    settings = GatewaySettings(api_base=fake_openrouter.base_url, max_retries=0, cache_path=tmp_path / "c.sqlite")
    gateway = Gateway(settings, TEST_API_KEY, usage_path=tmp_path / "usage.json")
    fake_openrouter.push_chat(chat_reply("first"), chat_reply("second"))
    try:
        marked = gateway.chat("anthropic/claude-sonnet-4", MESSAGES, cache_prefix=(0, -1))
        plain = gateway.chat("anthropic/claude-sonnet-4", MESSAGES)
    finally:
        gateway.close()
    (sent,) = fake_openrouter.chat_requests()  # the second call was a cache hit
    assert sent.json["messages"] == with_breakpoints("anthropic/claude-sonnet-4", MESSAGES, (0, -1))
    assert (marked.text, plain.text, plain.cached) == ("first", "first", True)
