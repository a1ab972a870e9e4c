"""A read reply (:class:`~audit.llm.replies.Generation`) as its caller gets it (pure logic, no I/O).

Two things happen between the server's words and the caller's: the text is cut at the caller's
stop sequences again (some servers drop special tokens before they match stops, so a stop can
reach the text), and the run's keys are masked in every field a model wrote, because model text
is stored and shown to other models too (only the keys: credential-shaped prose is the model's
own words).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from audit.llm.redact import Redactor
from audit.llm.replies import Generation, outcome_of
from audit.llm.types import LLMResponse
from audit.templates import cut_at_stops


def caller_reply(reply: Generation, *, model: str, stops: Sequence[str], redact: Redactor, started: float,
                 retries: int, endpoint: str, api_base: str, structured_output: str | None) -> LLMResponse:
    """The caller's :class:`LLMResponse` for ``reply`` to a request for ``model`` sent at ``started``
    (``time.perf_counter``) after ``retries`` failed attempts; a cut at a stop finishes as ``stop``."""
    cut = cut_at_stops(reply.text, stops)
    finish = "stop" if cut != reply.text else reply.finish_reason
    return LLMResponse(
        text=redact.keys(cut),
        finish_reason=finish,
        usage=reply.usage,
        model=redact.keys(reply.model or model),
        provider=redact.keys(reply.provider) if reply.provider else reply.provider,
        latency_s=time.perf_counter() - started,
        retries=retries,
        cached=False,
        endpoint=endpoint,
        api_base=api_base,
        structured_output=structured_output,
        surrogates_replaced=reply.replaced,
        outcome=outcome_of(cut, finish, reply.reasoning, reply.reasoning_tokens),
        native_finish_reason=reply.native_finish_reason,
        reasoning_tokens=reply.reasoning_tokens,
        generation_id=reply.generation_id,
        routing=reply.routing,
    )
