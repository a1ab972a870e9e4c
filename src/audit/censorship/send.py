"""Sending one planned draw to the audited model and writing its record: the one writer of a draw.

Every draw, a fixed technique's (its one-action kind, :func:`audit.censorship.action_kinds.probe_plan`),
an auto action's (:func:`audit.censorship.action_kinds.plan_draws`) or the benchmark's, is a
:class:`~audit.censorship.conversations.DrawPlan` sent here: the plan's fields, then the reply (or the
failure), where it came from (:func:`~audit.censorship.provenance.draw_fields`) and the settings it was
sampled with (:class:`~audit.record.draws.DrawSettings`). A failed call is recorded (``error``), not
raised, so the audit can go on ("continue if possible"); the caller decides which error kinds are fatal.
A call a filter stopped is no failure but a ``blocked`` draw (:func:`audit.record.draws.blocked_fields`).
The record is the typed :class:`~audit.record.draws.Draw` the files are read back as, built once with its
keys in the order the files always had them, so what was written before still compares byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.censorship.conversations import DrawPlan
from audit.censorship.provenance import draw_fields
from audit.censorship.techniques import Target
from audit.llm.aborted import request_text
from audit.llm.accounting import call_usage
from audit.llm.types import GatewayError, LLMResponse
from audit.record.draws import Draw, DrawSettings, blocked_fields, drawn_text
from audit.templates import split_run_on


@dataclass(frozen=True)
class Sample:
    """One sent draw: its record as it is written, and the kind of its failure (None: it came back)."""

    draw: Draw
    error_kind: str | None = None

    @property
    def text(self) -> str | None:
        return drawn_text(self.draw)


def settings(target: Target, plan: DrawPlan) -> DrawSettings:
    """What ``plan`` is sampled with: the chat API's budget for a chat draw (larger for a reasoning
    model), the template family for a rendered prompt (None for one sent as given)."""
    chat = plan.messages is not None
    return DrawSettings(model=target.model, endpoint=target.endpoint,
                        provider=dict(target.provider) if target.provider else None,
                        template=target.family.name if plan.templated else None,
                        max_tokens=(target.assistant_max_tokens or target.max_tokens) if chat else target.max_tokens,
                        temperature=target.temperature, stop=list(plan.stops),
                        extra_body=dict(target.extra_body) if target.extra_body else None)


async def send(gateway: Any, target: Target, plan: DrawPlan, *, sample_index: int, tag: str, draw: str) -> Sample:
    """Send ``plan`` to ``target`` (its ``messages`` through the chat API, else its ``prompt`` verbatim to
    ``/completions`` with its stops) as draw ``draw`` of sample ``sample_index`` (an audit's iteration, a
    benchmark's rollout: it enters the cache key and is the draw's ``iteration``), and make its record; a
    user turn's run-on into a next turn is kept apart (never judged as the user's words)."""
    used = settings(target, plan)
    planned: dict[str, Any] = {"iteration": sample_index, **plan.record()}
    if plan.messages is not None:
        call = gateway.achat(target.model, plan.messages, max_tokens=used.max_tokens, temperature=used.temperature,
                             provider=target.provider, sample_index=sample_index, tag=tag, endpoint=target.endpoint,
                             draw=draw, extra_body=target.extra_body)
    else:
        assert plan.prompt is not None
        call = gateway.acomplete(target.model, plan.prompt, stop=plan.stops, max_tokens=used.max_tokens,
                                 temperature=used.temperature, provider=target.provider, sample_index=sample_index,
                                 tag=tag, endpoint=target.endpoint, draw=draw, extra_body=target.extra_body)
    try:
        response: LLMResponse = await call
    except GatewayError as exc:
        failed = {**planned, "raw_response": None, "completion_tokens": 0, "finish_reason": None, "usage": None,
                  "error": str(exc), "settings": used}
        if exc.blocked is not None:  # a filter stopped the draw: a finding, not a failed call
            return Sample(Draw.model_validate({**failed, "error": None, **blocked_fields(exc.blocked.as_dict())}))
        return Sample(Draw.model_validate(failed), error_kind=exc.kind)
    replied = {**planned, "raw_response": response.text, "completion_tokens": response.usage.completion_tokens,
               "finish_reason": response.finish_reason, "usage": call_usage(response).as_dict(), "error": None,
               **draw_fields(response, request_text({"prompt": plan.prompt} if plan.prompt is not None else
                                                    {"messages": plan.messages or []}))}
    if plan.prompt is not None and plan.turn == "user":
        user, run_on = split_run_on(response.text, target.family.run_on_markers)
        if run_on is not None:  # never judged as the user's words: kept apart, counted in the summary
            replied.update(raw_response=user, run_on=run_on, outcome=response.outcome if user.strip() else "empty")
    return Sample(Draw.model_validate({**replied, "settings": used}))
