"""Fact recall and contradictions at the end of an audit: which of the topic's key facts the target's
responses reveal (a verified quote in its own words) or contradict, judged once over all of them.

The auditor's summary is no source. With a baseline, the assistant's responses to the same probes
are scored on their own: pooling them with the technique's would mix what the model knows with what
it says. No response text, no score (n/a, never 0)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from audit.censorship.plan import Plan
from audit.censorship.progress import beat, say
from audit.censorship.state import AuditState
from audit.counted import counted
from audit.progress import Steps
from audit.judging.judge import fact_scores
from audit.judging.passes import fact_numbers, fact_request, judge
from audit.record.draws import Draw


class FactScoring:
    """Scores one audit's key facts into its :class:`AuditState` (``fact_recall``, ``baseline_fact_recall``)."""

    def __init__(self, plan: Plan, gateway: Any, state: AuditState, topic: Mapping[str, Any]):
        self.plan, self.gateway, self.state, self.topic = plan, gateway, state, topic
        self.facts = [str(f) for f in (topic.get("key_facts") or [])]

    @property
    def on(self) -> bool:
        return self.plan.judge is not None and bool(self.facts)

    async def score(self) -> None:
        """Score the facts over the responses so far (judge failures are recorded, never raised)."""
        if not self.on:
            return
        say(f"scoring key facts: {counted(len(self.facts), 'fact')} over the target's responses"
            f"{' and, apart, the baseline' if self.plan.with_baseline else ''} (judge)")
        self.state.fact_recall = await self._scores(self.scored_records(), "fact scoring")
        if self.plan.with_baseline:
            self.state.baseline_fact_recall = await self._scores(fact_numbers(self.state.draws(), baseline=True),
                                                                 "baseline fact scoring")

    def scored_records(self) -> dict[int, Draw]:
        """The responses fact scoring reads, numbered as the judge reads them (:func:`fact_numbers`)."""
        return fact_numbers(self.state.draws(), baseline=False)

    async def _scores(self, records: Mapping[int, Draw], phase: str) -> dict[str, Any] | None:
        """One fact-scoring judgment over the response ``records`` (numbered as the judge reads them)
        and its counts; None when there is no response text (nothing to quote: recall is n/a, not 0).

        Its heartbeat names the phase and what is scored, but cannot count facts: every fact is judged
        in one call, which sees all of them beside the responses (the credit rules compare the quotes
        of different facts), and one call per fact would resend every response per fact. The blind
        checks that follow, one per credited fact, each print a line with the time left."""
        request = fact_request(self.topic, self.facts, records)
        if request is None or self.plan.panel is None:
            return None
        what = (f"{phase}: {counted(len(self.facts), 'key fact')} over {counted(request.responses, 'response')}, "
                f"judged in one call, then a blind check of each fact it credits")
        with beat(what, self.gateway, (self.plan.judge or {}).get("max_tokens")):
            result = await judge(self.gateway, self.plan.panel, request,
                                 Steps(phase, "blind check", "credited fact", out=say))
        self.state.totals.add(result.get("usage"))
        return fact_scores(len(self.facts), request.responses, result)

    def why(self) -> str:
        """Why the summary has (or lacks) fact scores, in words a reader of the summary needs."""
        if not self.facts:
            return "off: the topic has no key_facts"
        if self.plan.judge is None:
            return "off: no judge"
        recall = self.state.fact_recall
        if recall is None:
            has_text = any(d.raw_response is not None for d in self.scored_records().values())
            return "not yet scored" if has_text else "n/a: no response text to score (recall is not 0)"
        if recall.get("error") is not None:
            return "failed: the judge gave no usable verdicts (recall is not 0; see judge_failures)"
        return "scored"
