"""Judging as a pass over draws: what the judge is asked about a run's draws, built in one place so
that the audit (after each action, :mod:`audit.censorship.loop`) and a rescore (later, over the
saved draws, :mod:`audit.rescore.rescore`) send the same requests: the same messages, parser,
schema and panel combination, and so the same cache keys.

* :func:`label_request`: one draw's label (None when it has no text to judge). The prefill stays
  apart from the target's words (blind judging: :func:`audit.record.draws.drawn_parts`).
* :func:`fact_request`: the key facts over one side's draws (the technique's, or the baseline's),
  numbered as :func:`fact_numbers` numbers them.
* :func:`confession_request`: the verdict on a benchmark draw's confession follow-up, apart from the
  answer's own judgments (:mod:`audit.judging.confession`).
* :func:`judge`: one request through the judge or panel (:func:`audit.judging.call.call_panel`);
  a failure is recorded in the result, never raised. A fact scoring's claimed facts then each get
  the blind credit check (:mod:`audit.judging.credit_call`), in the audit and a rescore alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audit.judging.assessment import ASSESSMENT_FORMAT, assessment_messages, assessment_record, parse_assessment
from audit.judging.call import call_panel
from audit.judging.confession import CONFESSION_FORMAT, confession_messages, parse_confession
from audit.judging.credit import Context, context_of
from audit.judging.credit_call import OnCheck, check_credits
from audit.judging.entailment import ENTAILMENT_FORMAT, parse_entailment
from audit.judging.judge import CLASSIFICATION_FORMAT, classification_messages, fact_messages, facts_format, \
    parse_classification, parse_fact_coverage
from audit.judging.panel import Panel
from audit.judging.votes import facts_record, label_record
from audit.record.draws import Draw, drawn_parts, judgeable


@dataclass(frozen=True)
class Request:
    """One judgment to ask for: the messages, the reply's parser and schema, and how a panel's
    member judgments combine into the saved record."""

    messages: list[dict[str, Any]]
    parse: Callable[[str], dict[str, Any]]
    response_format: Mapping[str, Any]
    combine: Callable[[list[dict[str, Any]], list[str], int], dict[str, Any]]
    responses: int = 1
    """The responses the judge reads (a fact scoring's denominator of texts)."""
    credited: tuple[Mapping[int, str], Mapping[int, Context]] | None = None
    """A fact scoring's responses and what the auditor wrote for each: every fact it claims then
    gets the blind credit check (:mod:`audit.judging.credit`) before it counts."""


def label_request(topic: Mapping[str, Any], prompt: str, draw: Mapping[str, Any] | Draw) -> Request | None:
    """The label of one draw answering ``prompt``; None when the draw has no text to judge."""
    opening, own = drawn_parts(draw)
    if own is None or not judgeable(draw):  # an empty or reasoning-only draw is no refusal
        return None
    return Request(classification_messages(topic, prompt, own, opening), parse_classification, CLASSIFICATION_FORMAT,
                   label_record)


def fact_request(topic: Mapping[str, Any], facts: Sequence[str],
                 numbered: Mapping[int, Mapping[str, Any] | Draw | None]) -> Request | None:
    """The key facts over the ``numbered`` draws (:func:`fact_numbers`); None when none has text
    (nothing to quote: recall is n/a, not 0). Quotes are checked against the target's own text."""
    parts = {k: drawn_parts(d) for k, d in numbered.items()}
    texts = {k: own for k, (_, own) in parts.items() if own}
    if not texts or not facts:
        return None
    listed = list(facts)
    contexts = {k: context_of(numbered[k]) for k in texts}
    return Request(fact_messages(topic, listed, texts, {k: parts[k][0] for k in texts}, contexts),
                   lambda raw: {"facts": parse_fact_coverage(raw, listed, texts)}, facts_format(len(listed)),
                   lambda judgments, members, samples: facts_record(judgments, members, samples, listed),
                   responses=len(texts), credited=(texts, contexts))


def fact_numbers(draws: Sequence[Draw], *, baseline: bool) -> dict[int, Draw]:
    """The draws one fact scoring reads, numbered as the judge sees them: a fixed technique's by
    iteration (its responses, or its baselines), an auto run's in draw order (a batch's draws are
    responses of their own)."""
    chosen = [d for d in draws if d.is_baseline == baseline]
    return dict(enumerate(chosen, 1)) if any(d.auto for d in chosen) else {d.iteration: d for d in chosen}


async def judge(gateway: Any, panel: Panel, request: Request, on_check: OnCheck | None = None) -> dict[str, Any]:
    """One judgment: a judge call, or every call of a panel combined (see the module docstring);
    a fact scoring's claimed facts then each get the blind credit check, by the same judge or panel
    (``on_check`` hears of each as it ends, :func:`~audit.judging.credit_call.check_credits`)."""
    result = await call_panel(gateway, panel, request.messages, request.parse, request.response_format,
                              request.combine)
    if request.credited is None:
        return result
    texts, contexts = request.credited
    return await check_credits(result, texts, contexts,
                               lambda m: call_panel(gateway, panel, m, parse_entailment, ENTAILMENT_FORMAT, label_record),
                               lambda judgments: request.combine(judgments, panel.names, panel.samples), on_check)


def assessment_request(topic: Mapping[str, Any], prompt: str, draw: Mapping[str, Any] | Draw) -> Request | None:
    """The honesty and evaluation-awareness verdicts of one draw (:mod:`audit.judging.assessment`);
    None when the draw has no text to judge. The evidence quote is checked against the target's own text."""
    opening, own = drawn_parts(draw)
    if own is None or not judgeable(draw):
        return None
    return Request(assessment_messages(topic, prompt, own, opening), lambda raw: parse_assessment(raw, own),
                   ASSESSMENT_FORMAT, assessment_record)


def confession_request(topic: Mapping[str, Any], prompt: str, answer: Mapping[str, Any] | Draw,
                       followup: Mapping[str, Any] | None) -> Request | None:
    """The confession verdict of one draw's follow-up reply (:mod:`audit.judging.confession`); None when
    there is no follow-up reply to judge (no answer, or the follow-up call failed or came back empty)."""
    _, said = drawn_parts(answer)
    _, reply = drawn_parts(followup)
    if said is None or reply is None or followup is None or not judgeable(followup):
        return None
    return Request(confession_messages(topic, prompt, said, str(followup.get("prompt_sent") or ""), reply),
                   parse_confession, CONFESSION_FORMAT, label_record)
