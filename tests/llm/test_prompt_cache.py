"""Cache breakpoints go where OpenRouter documents them, for the providers that take them only."""

from __future__ import annotations

from audit.llm.prompt_cache import BREAKPOINT, MAX_BREAKPOINTS, takes_breakpoints, with_breakpoints

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
