"""Where each target draw came from, and what the run's draws say about it (pure logic).

OpenRouter load-balances a model across providers unless ``audited.provider`` pins one, and
some providers wrap a ``/completions`` prompt in a chat message: a draw is only the raw
continuation it claims to be if it came from a provider that honours the prompt. So every draw
records who served it (:func:`draw_fields`), and the run's summary lists the providers with
their draw counts and flags a run served by more than one, or by one the pin does not name
(:func:`served_summary`). Draws that are no answer (``audit.record.draws.UNJUDGED``) are never
judged, and a streak of failed draws stops the run (:func:`failure_streak`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from audit.llm.aborted import tokens_in
from audit.llm.types import Blocked, LLMResponse
from audit.record.draws import BLOCKED, Draw, blocked_fields

SHRUNK = 4
"""A prompt billed at less than a quarter of the tokens its text holds (at the gateway's estimate of
bytes per token, generous for any script) did not reach the model whole."""


def draw_fields(response: LLMResponse, sent: str = "") -> dict[str, Any]:
    """The fields a draw record gains from its reply: its outcome (a ``content_filter`` finish with no text
    :func:`~audit.record.draws.blocked_fields`) and where it came from, with any
    stage of OpenRouter's pipeline that altered the request (router metadata guide, "Pipeline
    Stages") and ``compressed`` when the prompt did not reach the model whole (a
    ``context_compression`` stage, or ``sent`` billed at under 1/:data:`SHRUNK` of its tokens)."""
    routing = response.routing or {}
    blocked = Blocked("content_filter", response.provider, response.native_finish_reason) \
        if response.outcome == BLOCKED else None  # a content_filter finish with no text
    attempts = routing.get("attempts") if isinstance(routing, dict) else None
    pipeline = routing.get("pipeline") if isinstance(routing, dict) else None
    pipeline = [stage for stage in pipeline if isinstance(stage, dict)] if isinstance(pipeline, list) else None
    return {
        **(blocked_fields(blocked.as_dict()) if blocked else {"outcome": response.outcome}),
        "served": {
            "provider": response.provider,
            "native_finish_reason": response.native_finish_reason,
            "reasoning_tokens": response.reasoning_tokens,
            "generation_id": response.generation_id,
            "routing": {"summary": routing.get("summary"), "attempts": attempts, "attempt": routing.get("attempt"),
                        **({"pipeline": pipeline} if pipeline else {})} if routing else None,
            "compressed": compression(pipeline or [], response.usage.prompt_tokens, sent),
        },
    }


def compression(pipeline: list[dict[str, Any]], billed: int, sent: str) -> str | None:
    """Why the prompt did not reach the model whole (None when nothing says so): OpenRouter's
    ``context_compression`` stage (e.g. middle-out, "42 messages to 30"), or a prompt billed far below
    what was sent, which no stage explained."""
    for stage in pipeline:
        if stage.get("type") == "context_compression":
            data = stage.get("data") if isinstance(stage.get("data"), dict) else {}
            counts = (f", {data.get('original_count')} {data.get('input_type') or 'items'} to "
                      f"{data.get('compressed_count')}") if "original_count" in data else ""
            return f"context compression ({data.get('engine') or stage.get('name') or 'unnamed'}{counts})"
    expected = tokens_in(sent) if sent else 0
    if billed > 0 and billed * SHRUNK < expected:
        return f"prompt billed {billed} tokens, about {expected} sent"
    return None


def failure_streak(draws: Iterable[Draw]) -> int:
    """How many of the last ``draws`` (in order) failed in a row."""
    streak = 0
    for draw in draws:
        streak = streak + 1 if draw.error is not None else 0
    return streak


def pinned_providers(pin: Mapping[str, Any] | None) -> list[str] | None:
    """The providers ``audited.provider`` allows draws from; None when any may serve them
    (no pin, or an ``order`` with fallbacks allowed)."""
    if not pin:
        return None
    only = pin.get("only")
    if only:
        return [str(p) for p in only]
    order = pin.get("order")
    if order and pin.get("allow_fallbacks") is False:
        return [str(p) for p in order]
    return None


def same_provider(served: str, pinned: str) -> bool:
    """OpenRouter names a provider ``DeepInfra`` in replies and ``deepinfra`` (a slug) in pins."""
    return served.lower().replace(" ", "").replace("-", "") == pinned.lower().replace(" ", "").replace("-", "")


def provider_slug(served: str) -> str:
    """The routing slug for the provider a reply names: ``order``, ``only`` and ``ignore`` take
    provider slugs (OpenRouter's provider routing guide, "Provider Routing": "List of provider slugs
    to allow"), while a reply names the provider (``DeepInfra``, ``Google AI Studio``). The slug is
    the name in lower case with hyphens for spaces (``deepinfra``, ``google-ai-studio``); the guide
    gives a model page's copy button as the exact source, so a printed pin says to check it there."""
    return "-".join(served.lower().split())


UNNAMED = "unknown"
"""The provider of a draw whose reply named none (as ``summary.json``'s ``served.providers`` records it)."""


def served_summary(draws: Iterable[Draw], pin: Mapping[str, Any] | None) -> dict[str, Any]:
    """Providers that served the target's answered draws and how many each, the outcomes counted
    (``content_filter`` and ``blocked`` among them: findings in a censorship audit), and ``flag``: why the draws
    may not all be what they claim (None when one provider the pin allows served them all)."""
    answered = [d for d in draws if d.error is None]
    providers = Counter(str(d.served.get("provider") or UNNAMED) for d in answered
                        if d.reply_outcome != BLOCKED or d.served)
    # a draw a typed 400/403 blocked was served by no provider (a content_filter finish was: it has "served")
    outcomes = Counter(str(d.reply_outcome or "answer") for d in answered)
    run_on = sum(d.run_on is not None for d in answered)
    compressed = sum(bool(d.served.get("compressed")) for d in answered)
    allowed = pinned_providers(pin)
    flags = []
    if compressed:
        flags.append(f"{compressed} draw(s) reached the model compressed (context compression, or a prompt billed "
                     "far below what was sent): the model did not see the whole prompt")
    if run_on:
        flags.append(f"{run_on} user-persona draw(s) ran on into the assistant's turn (cut there; the provider "
                     "strips the end-of-user token: pin another)")
    if len(providers) > 1:
        flags.append(f"served by {len(providers)} providers ({', '.join(sorted(providers))})")
    if allowed is not None:
        off_pin = sorted(p for p in providers if not any(same_provider(p, a) for a in allowed))
        if off_pin:
            flags.append(f"served by {', '.join(off_pin)}, not the pinned {', '.join(allowed)}")
    return {"providers": dict(sorted(providers.items())), "pin": dict(pin) if pin else None,
            "outcomes": dict(sorted(outcomes.items())), "run_on": run_on, "compressed": compressed,
            "flag": "; ".join(flags) or None}
