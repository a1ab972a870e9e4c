"""A benchmark draw as saved (one line of ``draws.jsonl``), typed: the audit's :class:`~audit.record.draws.Draw`
(what was sent, what came back, its label in ``classification``) plus who answered, which question and
rollout, the fact judgment and the assessment (honesty, evaluation awareness).

A resume appends a draw again when its call or a judgment failed; the latest line of a key is the draw
(:func:`latest_draws`), so every draw is counted once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from audit.benchmark import testbed_judging
from audit.record.draws import Draw, Judgment, judgeable

TARGET, REFERENCE = "target", "reference"
"""The two roles of a draw, never pooled: the model under test and the reference model."""
FAILED = "failed"
"""The outcome of a draw whose call failed (``llm/replies.py`` names the outcomes of a reply)."""


class BenchmarkDraw(Draw):
    """One rollout of one question to one model, with its judgments (None: not asked)."""

    item_key: str
    """``<role>/<question id>/<rollout>``: the draw's place in the run (a resume asks the keys missing)."""
    role: str = TARGET
    model: str = ""
    question_id: str
    rollout: int = 0
    framing: str = "natural"
    outcome: str | None = None
    error_kind: str | None = None
    judged: bool = True
    """The run had a judge (``judge=off``: nothing is judged, and nothing counts as a failed judgment)."""
    facts_judgment: dict[str, Any] | None = None
    assessment: Judgment | None = None
    testbed: dict[str, Any] | None = None
    """``protocol=chinese_auditing``: the testbed's judgments of the draw (:mod:`audit.benchmark.testbed_judging`);
    None under this tool's protocol (then the draw has ``classification``, ``facts_judgment`` and
    ``assessment`` instead, and the saved line has no ``testbed`` key)."""
    confession: dict[str, Any] | None = None
    """``technique=confession``: the follow-up asked after the answer (what was sent, what came back, who
    served it); judged apart in ``confession_judgment``, never part of the answer's judgments."""
    confession_judgment: Judgment | None = None

    @property
    def confession_failed(self) -> bool:
        """The follow-up was asked (a confession draw with an answer) but its call or its verdict failed
        (a resume asks it again; the answer's own judgments are unaffected)."""
        if self.confession is None:
            return False
        if self.confession.get("error") is not None:
            return True
        return self.judged and judgeable(self.confession) and (
            self.confession_judgment is None or self.confession_judgment.label is None)

    @property
    def judgeable(self) -> bool:
        """The draw has an answer a judge may read (:func:`audit.record.draws.judgeable`)."""
        return judgeable(self)

    @property
    def replayed(self) -> bool:
        """The answer came from the response cache or an identical request in flight, not from a sampling
        of its own: another run's draw with the same keys and text is the same draw, counted once."""
        return self.usage is not None and (self.usage.cached_calls + self.usage.shared_calls) > 0

    @property
    def label_failed(self) -> bool:
        return self.judged and self.judgeable and self.testbed is None and (
            self.classification is None or self.classification.label is None)

    @property
    def facts_failed(self) -> bool:
        """The whole fact judgment failed (no verdicts); a single fact's failed check is the fact's own."""
        return self.facts_judgment is not None and self.facts_judgment.get("facts") is None

    @property
    def assessment_failed(self) -> bool:
        return self.judged and self.judgeable and self.testbed is None and (
            self.assessment is None or self.assessment.label is None)

    @property
    def judge_failed(self) -> bool:
        """Any judgment of this draw failed (each leaves its own denominators; a resume asks them again)."""
        return self.label_failed or self.facts_failed or self.assessment_failed or testbed_judging.failed(self.testbed)

    def saved(self) -> dict[str, Any]:
        """The draw as one line of ``draws.jsonl`` (a draw of this tool's protocol has no ``testbed`` key,
        so its line is what it was before the testbed protocol existed)."""
        return self.model_dump(mode="json", exclude_none=False, exclude={"testbed"} if self.testbed is None else None)

    @property
    def complete(self) -> bool:
        """Nothing left to ask: the call succeeded, every judgment came back (or was not needed), and a
        confession draw's follow-up and its verdict too."""
        return self.error is None and not self.judge_failed and not self.confession_failed


def latest_draws(records: Iterable[Mapping[str, Any]]) -> dict[str, BenchmarkDraw]:
    """The draws of a journal by key, the latest line of each key winning; a line that is not a draw
    (a foreign or damaged record) is skipped."""
    out: dict[str, BenchmarkDraw] = {}
    for record in records:
        try:
            draw = BenchmarkDraw.model_validate(record)
        except ValidationError:
            continue
        out[draw.item_key] = draw
    return out
