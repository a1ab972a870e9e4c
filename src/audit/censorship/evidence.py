"""The auditor's citations, checked: every excerpt a hypothesis cites is looked up in the response it
names (:func:`audit.quotes.check_citation`) and marked ``verified``, with the reason when it is not.

Only the target's own words are evidence. A draw's text as the auditor reads it starts with what the
auditor wrote (a prefill, a user-persona opening) and answers its probe; a quote of those words proves
nothing about the target, yet was counted verified. The split is the judge's (blind judging:
:func:`audit.record.draws.drawn_parts` for the target's words, :func:`audit.judging.credit.context_of`
for the auditor's), so a citation and a fact credit draw the line in the same place."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from audit.censorship.schema import EVIDENCE_KEYS
from audit.judging.credit import context_of
from audit.quotes import Responses, check_citation, occurs
from audit.record.draws import Draw, drawn_parts, iteration_draws

AUDITOR_WORDS = "quotes the auditor's own words (its probe, prefill or opening), not the target's"


def check_evidence(hypotheses: list[dict[str, Any]], responses: Responses,
                   auditor: Responses | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Annotate every cited excerpt with ``verified``; return the annotated copy and the counts.

    ``responses`` maps iteration -> the target's own text, or a list of texts when the iteration has
    more than one sample (the response and its assistant baseline: each is searched on its own,
    so an elided quote cannot be stitched from both); a ``None`` is a failed call. ``auditor`` has
    the same shape with what the auditor wrote for each: it never verifies a quote, it only names
    why one found there is not evidence.
    """
    annotated = copy.deepcopy(hypotheses)
    for hypothesis in annotated:
        for key in EVIDENCE_KEYS:
            hypothesis[key] = [_checked(item, responses, auditor or {}) for item in hypothesis.get(key) or []]
    return annotated, citation_counts(annotated)


def _checked(item: Mapping[str, Any], responses: Responses, auditor: Responses) -> dict[str, Any]:
    """One citation checked; an unverified quote of the auditor's words says so, unless the target
    said it too elsewhere (a continued conversation resends earlier replies: the reason then names
    the iteration where the target said it)."""
    out = check_citation(item, responses)
    if not out["verified"] and check_citation(item, auditor)["verified"] and not _said(item, responses):
        out["reason"] = AUDITOR_WORDS
    return out


def _said(item: Mapping[str, Any], responses: Responses) -> bool:
    """True when any of the target's texts holds the quote."""
    texts: list[str] = []
    for value in responses.values():
        texts += [value] if isinstance(value, str) else [t for t in value or [] if isinstance(t, str)]
    return any(occurs(str(item.get("excerpt") or ""), t) for t in texts)


def quotable(records: Mapping[int, Mapping[str, Any]]) -> tuple[Responses, Responses]:
    """Per iteration, the texts a citation may quote (the target's own words) and the auditor's words
    beside them, draw for draw in draw order (:func:`~audit.record.draws.iteration_draws`): an auto
    action's draws (a citation's ``draw`` indexes them), or a fixed technique's response and its
    assistant baseline, if sampled."""
    own: dict[int, list[str | None]] = {}
    wrote: dict[int, list[str | None]] = {}
    for k, record in records.items():
        draws = iteration_draws(record)
        own[k] = [drawn_parts(d)[1] for d in draws]
        wrote[k] = [_auditor_words(d) for d in draws]
    return own, wrote


def _auditor_words(draw: Draw) -> str:
    """What the auditor wrote for one draw: the probe (and earlier turns it resent) and the text the
    target was made to continue."""
    context = context_of(draw)
    return "\n\n".join(t for t in (context.asked, context.continued) if t)


def citation_counts(hypotheses: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Citations, verified and unverified, from hypotheses :func:`check_evidence` annotated.

    Counting the saved marks (not re-checking) keeps a summary's counts equal to the marks its
    readers see, and lets the report count a run dir without its responses.
    """
    counts = {"citations": 0, "verified": 0, "unverified": 0}
    for hypothesis in hypotheses:
        for key in EVIDENCE_KEYS:
            for item in hypothesis.get(key) or []:
                counts["citations"] += 1
                counts["verified" if item.get("verified") else "unverified"] += 1
    return counts
