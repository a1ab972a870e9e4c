"""The loopback server's prompt caching, as OpenRouter documents it (a scriptable mode).

OpenRouterTeam/docs, ``guides/best-practices/prompt-caching.mdx``: Anthropic (and Gemini through
OpenRouter) cache the prefix up to a content part marked ``"cache_control": {"type": "ephemeral"}``,
and a later request reads it when its own prefix repeats it (Anthropic looks for hits at earlier
block boundaries too); OpenAI and DeepSeek cache long prefixes with no marks. Every reply reports
``usage.prompt_tokens_details`` with ``cached_tokens`` (read from the cache) and
``cache_write_tokens`` (written to it), both parts of ``prompt_tokens``.

:class:`PromptCache` wraps a handler (``server.handler = PromptCache().wrap(script.handler)``) and
sets those two counts on every chat reply the handler generates, from the prefixes earlier requests
left in its store. Token counts are :func:`~audit.testing.replies.estimate_tokens` of the joined
message texts up to a boundary, the same estimate ``prompt_tokens`` uses, so a whole repeated
request reads exactly its ``prompt_tokens`` less the new message.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from audit.testing.replies import CHAT, Handler, RecordedRequest, Reply, _Generation, content_text, estimate_tokens

EXPLICIT = ("anthropic/", "google/gemini")
"""Model ids whose providers cache only at breakpoints (the others cache every prefix on their own)."""
LOOKBACK = 20
"""Block boundaries before a breakpoint where Anthropic looks for an earlier cache entry."""


def marked(message: dict[str, Any]) -> bool:
    """Whether a message carries a ``cache_control`` breakpoint on any of its content parts."""
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content)


@dataclass
class PromptCache:
    """A provider-side prompt cache shared by every request the wrapped handler answers."""

    min_tokens: int = 0
    """Prefixes shorter than this are never cached (OpenAI: 1024; Claude Sonnet 4: 1024)."""
    _store: set[tuple[str, str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, inner: Handler) -> Handler:
        def answer(request: RecordedRequest) -> Reply | None:
            reply = inner(request)
            if reply is None or not isinstance(reply.body, _Generation) or request.endpoint != CHAT:
                return reply
            read, written = self.counts(request.json or {})
            usage = {**(reply.body.usage or {}),
                     "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written}}
            return replace(reply, body=replace(reply.body, usage=usage))
        return answer

    def counts(self, body: dict[str, Any]) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it) for one request, updating the store."""
        model = str(body.get("model") or "")
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        texts = [content_text(m.get("content")) for m in messages]
        prefixes = [json.dumps(texts[:i + 1], ensure_ascii=False) for i in range(len(texts))]
        sizes = [estimate_tokens("\n".join(texts[:i + 1])) for i in range(len(texts))]
        if model.startswith(EXPLICIT):
            marks = [i for i, m in enumerate(messages) if marked(m)]
            looked = {j for i in marks for j in range(max(0, i - LOOKBACK), i + 1)}
            stored = [i for i in marks if sizes[i] >= self.min_tokens]
        else:
            looked = set(range(len(messages)))
            stored = [i for i in looked if sizes[i] >= self.min_tokens]
        with self._lock:
            hits = [sizes[i] for i in looked if (model, prefixes[i]) in self._store]
            self._store.update((model, prefixes[i]) for i in stored)
        read = max(hits, default=0)
        if not model.startswith(EXPLICIT):
            return read, 0  # automatic caching: writes are not reported (OpenAI: "Cache writes: no cost")
        written = max((sizes[i] for i in stored), default=0)
        return read, max(written - read, 0)
