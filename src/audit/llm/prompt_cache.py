"""Provider prompt caching: where a request's stable prefix gets a ``cache_control`` breakpoint.

OpenRouter's documented shape (OpenRouterTeam/docs, ``guides/best-practices/prompt-caching.mdx``):
Anthropic Claude, and Gemini through OpenRouter, cache only what the request marks, with
``"cache_control": {"type": "ephemeral"}`` on a content part (the message's ``content`` as a list of
``{"type": "text", "text": ...}`` parts); Anthropic takes at most four breakpoints. OpenAI, DeepSeek,
Grok, Moonshot and Groq cache long prefixes on their own and get no breakpoints. Every provider
reports what it read from and wrote to its cache in ``usage.prompt_tokens_details.cached_tokens`` and
``cache_write_tokens`` (read in :mod:`audit.llm.replies`).

The marks are a transport detail: the gateway adds them to the bytes it sends after computing the
response-cache key from the unmarked request, so a run's cache identities are the same with and
without them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BREAKPOINT = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
"""Anthropic's limit per request (Gemini has none; the smaller one applies to both)."""
EXPLICIT_PREFIXES = ("anthropic/", "google/gemini")
"""Model ids (OpenRouter's ``vendor/model``) whose providers cache only at breakpoints."""


def takes_breakpoints(model: str) -> bool:
    """Whether requests to ``model`` should carry ``cache_control`` breakpoints."""
    return model.startswith(EXPLICIT_PREFIXES)


def with_breakpoints(model: str, messages: Sequence[Mapping[str, Any]], marks: Sequence[int]) -> list[dict[str, Any]]:
    """``messages`` with a breakpoint on each message of ``marks`` (indices; the last
    :data:`MAX_BREAKPOINTS` kept, as the later ones cover more) when ``model`` takes them;
    otherwise the messages unchanged. A marked message's string content becomes one text part."""
    out = [dict(m) for m in messages]
    if not takes_breakpoints(model):
        return out
    for i in sorted({i % len(out) for i in marks})[-MAX_BREAKPOINTS:] if out else ():
        content = out[i].get("content")
        if isinstance(content, str):
            out[i]["content"] = [{"type": "text", "text": content, "cache_control": dict(BREAKPOINT)}]
        elif isinstance(content, list) and content and isinstance(content[-1], Mapping):
            out[i]["content"] = [*content[:-1], {**content[-1], "cache_control": dict(BREAKPOINT)}]
    return out
