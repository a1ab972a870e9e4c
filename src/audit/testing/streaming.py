"""Streamed replies and what OpenRouter bills for them, as the loopback server plays them (stdlib only).

Sources (OpenRouter docs, repository OpenRouterTeam/docs):

- API reference, "Streaming" (openrouter.ai/docs/api-reference/streaming): ``stream: true`` answers
  with Server-Sent Events, ``data: <chunk JSON>`` lines ending with ``data: [DONE]``; comments
  (``: OPENROUTER PROCESSING``) keep the connection alive and must be skipped; an error after
  tokens were sent is one last event with ``error`` at the top level beside the chunk fields and
  ``choices[0].finish_reason: "error"``, after which the stream ends. "Stream Cancellation":
  aborting the connection "immediately stops model processing and billing" for the providers
  it lists as supported; "For non-streaming requests or unsupported providers, the model will
  continue processing and you will be billed for the complete response".
- Usage accounting guide (guides/usage-accounting): usage (tokens, ``cost``) "is included in the
  last SSE message for streaming responses"; the chunk object is ``chat.completion.chunk``.

- Router metadata guide (guides/features/router-metadata.mdx): with ``X-OpenRouter-Metadata:
  enabled``, "For streaming responses, ``openrouter_metadata`` is delivered on the final chunk before
  ``data: [DONE]``".

- API reference, "Create a completion" (openrouter.ai/docs/api/api-reference/completions/create-completions,
  ``POST /api/v1/completions``): "Supports both streaming and non-streaming modes"; its
  ``CompletionResponse`` has ``object: "text_completion"`` and ``provider``, and each
  ``CompletionChoice`` ``text``, ``index``, ``logprobs`` (required, may be null), ``finish_reason``,
  ``native_finish_reason`` and ``reasoning``.
- API overview, "CompletionsResponse format" (api_reference/overview.mdx): a prompt's choice is
  ``NonChatChoice`` (``text`` where a chat choice has ``message`` or, streamed, ``delta``), and
  "When streaming, usage is returned exactly once in the final chunk before the [DONE] message,
  with an empty choices array".

A chunk carries the same ``id``, ``created``, ``model`` and ``provider`` as the whole reply;
chat chunks hold ``delta`` (``content``, or ``reasoning`` for a reasoning model's thinking),
completion chunks the ``CompletionChoice`` fields, their piece in ``text`` (or ``reasoning``).
The gateway streams only chat calls (:func:`audit.llm.request.streams`); the completion
stream is here because OpenRouter serves one to any client that asks (the loopback server runs on
its own too, ``python -m audit.testing.fake_openrouter``), and it is tested with the openai client.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from audit.llm.stream_cancel import stops_billing
from audit.testing.replies import CHAT, COMPLETION_PRICE_PER_TOKEN, PROMPT_PRICE_PER_TOKEN, estimate_tokens

KEEP_ALIVE = b": OPENROUTER PROCESSING\n\n"
DONE = b"data: [DONE]\n\n"
MALFORMED = b'data: {"id": "gen-cut\n\n'
"""A ``data:`` line that is not JSON (:attr:`audit.testing.replies.Reply.stream_malformed`)."""
KEEP_ALIVE_NOTHING = b"\n"
"""An empty line: no event, but a write that fails once the client has hung up."""


@dataclass(frozen=True)
class Bill:
    """What OpenRouter charges for one generation the loopback server served.

    ``aborted``: the client hung up before the whole reply was sent. A non-streamed reply, or a
    streamed one from a provider that does not stop on cancellation, is billed whole anyway.
    """

    generation_id: str
    provider: str
    streamed: bool
    aborted: bool
    prompt_tokens: int
    completion_tokens: int

    @property
    def cost(self) -> float:
        return self.prompt_tokens * PROMPT_PRICE_PER_TOKEN + self.completion_tokens * COMPLETION_PRICE_PER_TOKEN


def pieces(text: str) -> list[str]:
    """``text`` cut into token-sized pieces (a word with the space before it), joined back exactly."""
    return re.findall(r"\s*\S+|\s+$", text) if text else []


def events(payload: dict[str, Any], kind: str) -> Iterator[tuple[bytes, str]]:
    """The SSE events of the whole reply ``payload`` (as :meth:`_Generation.payload` builds it),
    each with the piece of generated text it carries (for billing what was sent)."""
    head = {k: payload[k] for k in ("id", "created", "model", "provider")}
    head["object"] = "chat.completion.chunk" if kind == CHAT else "text_completion"
    choice = payload["choices"][0]
    reasoning = (choice.get("message") or {}).get("reasoning") if kind == CHAT else choice.get("reasoning")
    text = (choice.get("message") or {}).get("content") if kind == CHAT else choice.get("text")
    for field, piece in [*(("reasoning", p) for p in pieces(reasoning or "")),
                         *(("content", p) for p in pieces(text or ""))]:
        if kind == CHAT:
            delta = {"role": "assistant", field: piece}
            part: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None, "native_finish_reason": None}
        else:
            part = {"index": 0, "text": piece if field == "content" else "", "logprobs": None, "finish_reason": None,
                    "native_finish_reason": None, **({"reasoning": piece} if field == "reasoning" else {})}
        yield _data({**head, "choices": [part]}), piece
    finish = choice.get("finish_reason")
    if choice.get("error") is not None or finish == "error":
        error = {"code": "server_error", "message": (choice.get("error") or {}).get("message", "Provider error")}
        last = {"index": 0, "finish_reason": "error", "native_finish_reason": "error",
                **({"delta": {"content": ""}} if kind == CHAT else {"text": "", "logprobs": None})}
        yield _data({**head, "error": error, "choices": [last]}), ""
        return  # "The stream is terminated after this unified error event"
    last = {"index": 0, "finish_reason": finish, "native_finish_reason": choice.get("native_finish_reason"),
            **({"delta": {"role": "assistant", "content": ""}} if kind == CHAT else {"text": "", "logprobs": None})}
    yield _data({**head, "choices": [last]}), ""
    routing = {"openrouter_metadata": payload["openrouter_metadata"]} if "openrouter_metadata" in payload else {}
    yield _data({**head, "choices": [], "usage": payload["usage"], **routing}), ""
    yield DONE, ""


def bill(payload: dict[str, Any], *, streamed: bool, sent: str | None) -> Bill:
    """The bill for ``payload``: whole, unless it was streamed, cut off after ``sent`` (the text
    sent so far; None: sent whole), and served by a provider that stops billing on cancellation."""
    usage = payload["usage"]
    aborted = sent is not None
    partial = aborted and streamed and stops_billing(str(payload.get("provider") or ""))
    return Bill(generation_id=str(payload["id"]), provider=str(payload.get("provider") or ""), streamed=streamed,
                aborted=aborted, prompt_tokens=int(usage["prompt_tokens"]),
                completion_tokens=estimate_tokens(sent or "") if partial else int(usage["completion_tokens"]))


def _data(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"
