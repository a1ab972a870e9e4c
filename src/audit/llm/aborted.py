"""What a call cut off in flight may cost: an estimate, marked as one (pure logic, no I/O).

A call the gateway stops waiting for (its deadline, Ctrl-C, SIGTERM, a spent budget) reached the
server, and OpenRouter bills it: whole when it was not streamed or its provider does not stop on
cancellation, for what was generated so far otherwise (:mod:`audit.llm.stream_cancel`). The reply
that would have said what it cost never comes, so the ledger records an estimate instead of the
zero it used to: prompt tokens from the request's text, completion tokens up to ``max_tokens``
(or what was received, when the stream's provider stops), priced at the model's input and output
price (:mod:`audit.llm.prices`: litellm's map, else OpenRouter's model list). The estimate errs
towards paying: a budget stops early rather than late.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from audit.counted import counted
from audit.llm.prices import Price
from audit.llm.stream_cancel import stops_billing
from audit.record.usage import Usage

BYTES_PER_TOKEN = 3
"""Prompt and received text are counted as UTF-8 bytes / 3, rounded up: above the ~4 characters
a token of English text, about one token per character of Chinese (3 bytes each)."""


@dataclass(frozen=True)
class Estimate:
    """Tokens and cost of a cut-off call as the gateway reckons them; ``basis`` says how, in words."""

    prompt_tokens: int
    completion_tokens: int
    cost: float
    basis: str


def tokens_in(text: str) -> int:
    """Estimated tokens of ``text`` (:data:`BYTES_PER_TOKEN`)."""
    return -(-len(text.encode("utf-8", "replace")) // BYTES_PER_TOKEN)


def request_text(payload: Mapping[str, Any]) -> str:
    """The text a request bills as prompt: the raw prompt, or every message's content, plus any
    structured-output schema (providers count it as prompt)."""
    if "prompt" in payload:
        return str(payload["prompt"])
    parts = []
    for message in payload.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    if payload.get("response_format"):
        parts.append(json.dumps(payload["response_format"], ensure_ascii=False))
    return "\n".join(parts)


def estimate(payload: Mapping[str, Any], *, max_tokens: int | None, streamed: bool, received: str,
             provider: str | None, price: Price | None) -> Estimate:
    """The estimate for one cut-off attempt of ``payload``.

    ``received`` is the text (answer and reasoning) a stream delivered before it was cut off and
    ``provider`` the one that served it; a stream whose provider stops on cancellation is billed
    for about what it sent (one token more, in flight), anything else for up to ``max_tokens``.
    """
    prompt = tokens_in(request_text(payload))
    stopped = streamed and stops_billing(provider)
    if stopped:
        completion, how = tokens_in(received) + 1, f"streamed; {provider} stops billing on cancellation: what was received"
    elif max_tokens is not None:
        completion = int(max_tokens)
        how = ("not streamed: billed whole, up to max_tokens" if not streamed else
               f"streamed; {provider or 'an unnamed provider'} is not known to stop billing: up to max_tokens")
    else:
        completion, how = tokens_in(received), "no max_tokens: only what was received (an underestimate)"
    cost = prompt * price.input + completion * price.output if price is not None else 0.0
    priced = f"at the model's price in {price.origin}" if price is not None else "no price known: cost counted as 0"
    return Estimate(prompt, completion, round(cost, 10),
                    f"estimated (prompt: request bytes / {BYTES_PER_TOKEN}; completion: {how}; {priced})")


def note(totals: Usage | Mapping[str, Any]) -> str:
    """The end line's part for calls cut off in flight (the ledger's ``aborted_calls`` and
    ``estimated_cost``), e.g. ``; 2 calls cut off in flight (may be billed: estimated $0.0120, in the
    cost)``; empty when none was."""
    usage = Usage.of(totals)
    if not usage.aborted_calls:
        return ""
    return (f"; {counted(usage.aborted_calls, 'call')} cut off in flight (may be billed: estimated "
            f"${usage.estimated_cost:.4f}, in the cost)")
