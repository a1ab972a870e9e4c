"""A streamed reply put together chunk by chunk, and what it had delivered when it was cut off.

OpenRouter streams a reply as chunks (API reference, "Streaming"): each carries the generation's
``id``, ``model`` and ``provider`` and a ``delta`` of text (``content``) or of a reasoning model's
thinking (``reasoning``); the chunk that ends the text carries ``finish_reason`` and
``native_finish_reason``; usage and ``cost`` come in the last one (usage accounting guide). litellm
hands each chunk over parsed (the provider's name in its hidden params as ``upstream_provider``).
:class:`Received` keeps what has arrived, so a call cut off by its deadline knows how much was
generated and by whom (:mod:`audit.llm.aborted`), and a whole stream becomes one reply of the shape
:func:`audit.llm.replies.read_reply` reads, so both kinds of call are classified in one place.
The event lines are read here (:func:`event_data`, :func:`chunk_json`), not by litellm's handler,
which turns a ``data:`` line that is not JSON into an empty chunk: a stream with a gap read as whole.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from audit.llm.replies import field_of
from audit.llm.types import MalformedEvent

DONE = "[DONE]"
"""The data of the event that ends an OpenRouter stream."""
SHOWN_CHARS = 80
"""How much of a malformed event the failure quotes."""


def event_data(line: str) -> str | None:
    """The data of one line of a Server-Sent Events body, or None for a line that carries none.

    OpenRouter sends ``data: <chunk JSON>`` lines, ``data: [DONE]`` at the end and comments
    (``: OPENROUTER PROCESSING``) to keep the connection alive, which clients skip (API reference,
    "Streaming"); blank lines separate events. The field is read as the SSE standard says (one
    space after the colon is not part of the value)."""
    if not line.startswith("data:"):
        return None
    value = line[len("data:"):]
    return value[1:] if value.startswith(" ") else value


def chunk_json(data: str) -> dict[str, Any]:
    """One event's data as the JSON object every OpenRouter chunk is; :class:`MalformedEvent` otherwise."""
    try:
        chunk = json.loads(data)
    except ValueError:
        chunk = None
    if not isinstance(chunk, dict):
        raise MalformedEvent(f"a streamed event that is not a JSON object: {data[:SHOWN_CHARS]!r}")
    return chunk


class Received:
    """What a stream has delivered so far."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.generation_id: str | None = None
        self.model: str | None = None
        self.provider: str | None = None
        self.finish_reason: str | None = None
        self.native_finish_reason: str | None = None
        self.usage: Any = None
        self.chunks = 0

    def add(self, chunk: Any) -> None:
        """Take one chunk (litellm's parsed chunk object; its bookkeeping dicts carry nothing of OpenRouter's)."""
        if isinstance(chunk, dict):
            return
        self.chunks += 1
        self.generation_id = self.generation_id or field_of(chunk, "id")
        self.model = self.model or field_of(chunk, "model")
        hidden = getattr(chunk, "_hidden_params", None) or {}
        self.provider = self.provider or field_of(chunk, "provider") or hidden.get("upstream_provider")
        if field_of(chunk, "usage") is not None:
            self.usage = field_of(chunk, "usage")
        for choice in field_of(chunk, "choices") or ():
            delta = field_of(choice, "delta")
            if delta is not None:
                self.text.append(field_of(delta, "content") or "")
                self.reasoning.append(field_of(delta, "reasoning") or field_of(delta, "reasoning_content") or "")
            self.finish_reason = field_of(choice, "finish_reason") or self.finish_reason
            self.native_finish_reason = field_of(choice, "native_finish_reason") or self.native_finish_reason

    @property
    def finished(self) -> bool:
        """The finish reason and the usage have both arrived: OpenRouter sends usage "exactly once in
        the final chunk before the [DONE] message" (API overview), so nothing is left to wait for, and a
        server that never sends ``[DONE]`` does not turn a whole reply into one cut off at the deadline."""
        return self.finish_reason is not None and self.usage is not None

    @property
    def so_far(self) -> str:
        """Everything generated so far, thinking included (both are billed as completion tokens)."""
        return "".join(self.reasoning) + "".join(self.text)

    def whole(self) -> Any:
        """The finished stream as one chat reply (``choices[0].message``, ``usage``, ``provider``, ``id``)."""
        message = SimpleNamespace(content="".join(self.text), reasoning_content="".join(self.reasoning) or None)
        choice = SimpleNamespace(message=message, finish_reason=self.finish_reason,
                                 native_finish_reason=self.native_finish_reason, error=None)
        return SimpleNamespace(choices=[choice], usage=self.usage, model=self.model, provider=self.provider,
                               id=self.generation_id, error=None, openrouter_metadata=None)
