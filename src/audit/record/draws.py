"""What an audit writes per step, typed: :class:`Turn` (an auditor turn), :class:`Draw` (one target
sample) and :class:`Judgment` (a judge's, or a panel's, record of one item).

One shape for every run: a fixed technique is a menu of one action, so each of its iterations is one
draw (and its assistant baseline, when sampled, a draw of its own marked ``is_baseline``);
``technique=auto`` writes an iteration's draws under ``draws``. :func:`iteration_draws` reads either
file shape into the same list, so no reader decides for itself which one it has. The files are not
rewritten (the writers' dicts, and so every exact-bytes test and cache key, stay as they were):
records are typed on read, as ``summary.json`` is (:mod:`audit.record.summary`), and the models allow
extra fields, so a field a newer writer adds passes through and an older run dir still loads.

``cell`` names what compare counts a draw under, never pooling what differs: the run's technique,
``assistant (baseline)`` for a baseline, ``auto/<technique>`` for an auto draw (there the auditor
chose the technique per draw).

A draw's judgments are keyed by the judging's name (``judgings``, as inspect_ai's ``EvalSample.scores``):
the audit's own under :data:`ORIGINAL` (its saved ``classification``), and each rescore or panel under
the name of its ``judgings/<name>/`` folder, added on read (:func:`audit.record.judgings.judged_draws`).
A reader picks a judging by name; none has to join a rescore's file to the run's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from audit.record.summary import StoredUsage

AUTO = "auto"
"""``technique=auto``: the auditor picks an action per turn from a menu."""
AUTO_PREFIX = AUTO + "/"
"""The cells of a ``technique=auto`` run: ``auto/<technique>`` per technique of its draws, each draw
counted once (``draw_classifications``). Never pooled with a fixed technique's runs (there the
technique is the run's; under auto the auditor chose it per draw), and without a fact recall of
their own (the run's fact score is over all its draws)."""
BASELINE_SUFFIX = " (baseline)"
BASELINE_TECHNIQUE = "assistant"
"""A fixed technique's baseline draws ask the same probe as the assistant."""
ORIGINAL = "original"
"""The name of a run's own judging (the one its audit made), beside those a rescore adds: not the
judge's model id, which a rescore with the same judge would share."""


class Judgment(BaseModel):
    """One judged item as saved (a draw's ``classification``): a single judge's label and rationale,
    or a panel's majority with each member's votes, its ``outcome`` and every call (``judgments``).
    ``label`` None is a failed judgment (it leaves every share's denominator and is shown)."""

    model_config = ConfigDict(extra="allow")
    label: str | None = None
    rationale: str | None = None
    outcome: str | None = None
    members: dict[str, list[str | None]] | None = None
    judgments: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None
    usage: StoredUsage = None

    @property
    def panel(self) -> bool:
        """A panel's record (it has an outcome and each member's votes)."""
        return self.outcome is not None


class DrawSettings(BaseModel):
    """What a draw was sampled with, written beside it by the one writer (:func:`audit.censorship.send.send`),
    so a draw read alone says which model, server, provider pin, chat template and sampling parameters
    made it (before, only the run's ``config.yaml`` did, and a resumed or extended run could differ)."""

    model_config = ConfigDict(extra="allow")
    model: str
    endpoint: str
    provider: dict[str, Any] | None = None
    template: str | None = None
    """The chat template family's name (None: a raw ``/completions`` prompt sent as given)."""
    max_tokens: int | None = None
    temperature: float | None = None
    stop: list[str] = Field(default_factory=list)
    extra_body: dict[str, Any] | None = None


class Draw(BaseModel):
    """One target sample: what was sent, what came back, with what settings, and its judgment."""

    model_config = ConfigDict(extra="allow")
    iteration: int
    technique: str
    is_baseline: bool = False
    auto: bool = False
    id: str | None = None
    """``<iteration>.<n>`` for an auto draw (its place in the conversation tree); None otherwise."""
    prompt_sent: str | None = None
    raw_response: str | None = None
    prefill: str | None = None
    error: str | None = None
    usage: StoredUsage = None
    classification: Judgment | None = None
    judgings: dict[str, Judgment] = Field(default_factory=dict, exclude=True)
    """Judging name -> this draw's judgment under it (absent: that judging did not judge it). Never
    written back: the saved record keeps its one ``classification``."""
    settings: DrawSettings | None = None
    """None in a run dir written before draws carried their settings."""

    @model_validator(mode="after")
    def _own_judging(self) -> Draw:
        """The audit's own judgment is the :data:`ORIGINAL` judging's."""
        if self.classification is not None:
            self.judgings.setdefault(ORIGINAL, self.classification)
        return self

    @property
    def cell(self) -> str:
        """The comparison cell this draw counts in (see the module docstring)."""
        if self.auto:
            return AUTO_PREFIX + self.technique
        return self.technique + BASELINE_SUFFIX if self.is_baseline else self.technique

    @property
    def key(self) -> str:
        """The draw's name in a judging's journal: ``<iteration>/response``, ``<iteration>/baseline``,
        or ``<draw id>/response`` for an auto draw."""
        return f"{self.id if self.auto else self.iteration}/{'baseline' if self.is_baseline else 'response'}"

    @property
    def judgment(self) -> Judgment | None:
        return self.classification

    def get(self, key: str, default: Any = None) -> Any:
        """A field as a saved record's ``get`` reads it (declared or extra), so readers of either take both."""
        return getattr(self, key, default)


def iteration_draws(record: Mapping[str, Any], technique: str | None = None) -> list[Draw]:
    """The draws of one saved ``audited_responses/<k>.json``, in the order they were drawn: an
    auto action's ``draws``, or a fixed technique's response then its baseline (if sampled).
    ``technique`` is the run's, for fixed records written before they named it."""
    k = int(record["iteration"])
    if "draws" in record:
        return [Draw.model_validate({**d, "iteration": k, "auto": True}) for d in record["draws"]]
    main = {key: v for key, v in record.items() if key != "baseline"}
    draws = [Draw.model_validate({**main, "iteration": k, "technique": record.get("technique") or technique or "?"})]
    baseline = record.get("baseline")
    if isinstance(baseline, Mapping):
        draws.append(Draw.model_validate({**baseline, "iteration": k, "technique": BASELINE_TECHNIQUE,
                                          "is_baseline": True}))
    return draws


def drawn_parts(draw: Mapping[str, Any] | Draw | None) -> tuple[str, str | None]:
    """``(opening, own)`` of a draw: the assistant opening the auditor wrote (a prefill, "" when
    none) and the target's own text (None: the call failed). The judge reads them apart (blind
    judging: the auditor's words are never the target's); the auditor reads them joined
    (:func:`drawn_text`). The one place a draw's text is read from its record."""
    if isinstance(draw, Draw):
        draw = draw.model_dump()
    if not draw or draw.get("raw_response") is None:
        return "", None
    return str(draw.get("prefill") or ""), str(draw["raw_response"])


def drawn_text(draw: Mapping[str, Any] | Draw | None, *, turn: bool = False) -> str | None:
    """A draw's text as the auditor reads it: the prefill, then the continuation (alone it often starts
    mid-sentence). ``turn``: the whole turn the conversation holds, a user turn's opening included
    (a user-persona or follow-up user draw continues the auditor's words). None: the call failed."""
    opening, own = drawn_parts(draw)
    if own is None:
        return None
    if turn and not opening:
        opening = str((draw.model_dump() if isinstance(draw, Draw) else draw or {}).get("opening") or "")
    return opening + own


def run_draws(records: Iterable[Mapping[str, Any]], technique: str | None = None) -> list[Draw]:
    """Every draw of a run's saved iterations, in order (:func:`iteration_draws`)."""
    return [d for record in records for d in iteration_draws(record, technique)]


def judgments(draws: Iterable[Draw]) -> list[dict[str, Any] | None]:
    """The draws' judgments as saved (None: a draw the judge did not see), for counting labels."""
    return [d.classification.model_dump(exclude_unset=True) if d.classification is not None else None for d in draws]


class Turn(BaseModel):
    """One auditor turn as saved (``auditor_turns/<k>.json``): what it was sent, its raw reply, the
    validated ``parsed`` reply, the unusable attempts before it and what the turn cost."""

    model_config = ConfigDict(extra="allow")
    iteration: int
    raw_response: str = ""
    parsed: dict[str, Any] = Field(default_factory=dict)
    input_messages: list[dict[str, Any]] = Field(default_factory=list)
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    final_requested: bool = False
    usage: StoredUsage = None

    @property
    def continues(self) -> bool:
        """The auditor asked for another draw (``should_continue``)."""
        return bool(self.parsed.get("should_continue", False))


BLOCKED = "blocked"
"""The outcome of a draw a filter between the user and the model stopped before any of its words came back
(:func:`blocked_fields`; ``audit.llm.replies.outcome_of`` gives it to a ``content_filter`` finish with no text)."""
UNJUDGED = frozenset({"empty", "reasoning_only", BLOCKED})
"""Draw outcomes that are no answer (``LLMResponse.outcome``): an empty draw is not a refusal, a
reasoning-only one not an empty answer, a blocked one not the model's words at all, so none is ever
judged; each is counted in the summary."""


def blocked_fields(blocked: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a draw gains when a filter stopped it (``GatewayError.blocked.as_dict()``: a typed 400
    ``content_policy_violation`` or ``refusal``, a guardrail's or moderation's 403): outcome
    :data:`BLOCKED` and the filter's code, provider and reason. A finding, not a failure: no ``error``
    (so no failure streak counts it), never judged (so never a refusal), counted per cell by
    :func:`blocked_counts`.

    A 200 with ``finish_reason: "content_filter"`` and text sits apart (outcome ``content_filter``): the
    model's words up to the cut came back and are judged, where a blocked draw has none to judge; one
    with no text is blocked too (``code`` ``content_filter``: :func:`audit.censorship.provenance.draw_fields`)."""
    return {"outcome": BLOCKED, "blocked": dict(blocked)}


def blocked_counts(draws: Iterable[Draw]) -> dict[str, int]:
    """Blocked draws per comparison cell (:attr:`Draw.cell`); cells without one are left out."""
    counts: dict[str, int] = {}
    for draw in draws:
        if getattr(draw, "outcome", None) == BLOCKED:
            counts[draw.cell] = counts.get(draw.cell, 0) + 1
    return dict(sorted(counts.items()))


def judgeable(draw: Mapping[str, Any] | Draw) -> bool:
    """Whether a draw has an answer a judge may label (a failed call or an unjudged outcome has none)."""
    get = draw.get if isinstance(draw, Mapping) else lambda key: getattr(draw, key, None)
    return get("error") is None and get("outcome") not in UNJUDGED
