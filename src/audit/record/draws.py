"""What an audit writes per step, typed: :class:`Turn` (an auditor turn), :class:`Draw` (one target
sample) and :class:`Judgment` (a judge's, or a panel's, record of one item).

One shape for every run: a fixed technique is a menu of one action, so each of its iterations is one
draw (and its assistant baseline, when sampled, a draw of its own marked ``is_baseline``);
``technique=auto`` writes an iteration's draws under ``draws``. :func:`iteration_draws` reads either
file shape into the same list, so no reader decides for itself which one it has.

A draw is written as the typed record it is read as: the one writer (:func:`audit.censorship.send.send`)
builds a :class:`Draw`, and an iteration's file is made from its draws (:func:`fixed_file`,
:func:`auto_file`, the inverse of :func:`iteration_draws`). A written record (:class:`Written`) keeps the
keys it was given in the order it was given them, and only those, so every file has the bytes it had when
the writers built dicts (``tests/censorship/test_saved_draw_bytes.py``), a derived field (``judgings``)
is never written, and the models allow extra fields, so a field a newer writer adds passes through and an
older run dir still loads.

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
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ModelWrapValidatorHandler, PrivateAttr, model_validator

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


class Written(BaseModel):
    """A record as a run file holds it: :meth:`given` is the keys it was given, in the order it was given
    them (declared or extra; a nested written record likewise), so a file made from the typed record has
    the bytes the record's writer has always produced. Two records given the same values in another
    order are written differently, so they are not equal."""

    model_config = ConfigDict(extra="allow")
    unwritten: ClassVar[frozenset[str]] = frozenset()
    """Fields the record holds that its file says by where the record sits, not as keys of its own."""
    _given: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_given_order(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        made = handler(data)
        if isinstance(data, Written):
            made._given = data._given
        elif isinstance(data, Mapping):
            made._given = tuple(data)
        return made

    def _value(self, key: str) -> Any:
        extra = self.model_extra or {}
        return extra[key] if key in extra else getattr(self, key)

    def given(self) -> dict[str, Any]:
        """The record as its file holds it: the keys given, in their order, without :attr:`unwritten`."""
        dumped = self.model_dump()
        out: dict[str, Any] = {}
        for key in self._given:
            if key in self.unwritten:
                continue
            value = self._value(key)
            out[key] = value.given() if isinstance(value, Written | DrawSettings) else dumped.get(key, value)
        return out

    def extended(self, **fields: Any) -> Self:
        """This record with ``fields`` set (validated): a key it had keeps its place, a new one comes last."""
        return self.model_validate({**{key: self._value(key) for key in self._given}, **fields})


class Judgment(Written):
    """One judged item as saved (a draw's ``classification``): a single judge's label and rationale,
    or a panel's majority with each member's votes, its ``outcome`` and every call (``judgments``).
    ``label`` None is a failed judgment (it leaves every share's denominator and is shown)."""

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

    def given(self) -> dict[str, Any]:
        """The settings as a draw's file holds them: without the defaults (a field left out was not set)."""
        return self.model_dump(exclude_defaults=True)


def _tree() -> Any:
    """A conversation-tree field of :class:`Draw`: written as given (:meth:`Written.given`), dumped only when
    set, so a model built on :class:`Draw` that never has it (the benchmark's draw) dumps what it always did."""
    return Field(None, exclude_if=lambda value: value is None)


class Draw(Written):
    """One target sample: what was sent, what came back, with what settings, and its judgment; built by
    the one writer and written as given (:meth:`Written.given`), its iteration, baseline and auto marks
    said by where the file puts it."""

    unwritten: ClassVar[frozenset[str]] = frozenset({"iteration", "is_baseline", "auto"})
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
    action: str | None = _tree()
    """An auto draw's action kind (its place in the conversation tree, this and the fields below, is an
    auto draw's only; left out of a dump when None, so a benchmark draw's line is what it was)."""
    conversation: str | None = _tree()
    branch: str | None = _tree()
    parent: str | None = _tree()
    """The draw whose turn precedes this one in its branch (None: the conversation's first)."""
    system: str | None = _tree()
    user: str | None = _tree()
    """The auditor's user turn the draw answers (None: none, e.g. a user-persona or follow-up user draw)."""
    opening: str | None = _tree()
    """The auditor's opening of a user turn the target continued."""

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

    def _saved(self, key: str) -> Any:
        """A field the draw's writer adds and :class:`Draw` does not declare (a model built on it may)."""
        return getattr(self, key, None) if key in type(self).model_fields else (self.model_extra or {}).get(key)

    @property
    def reply_outcome(self) -> str | None:
        """What the reply was (``LLMResponse.outcome``, or :data:`BLOCKED`); None for a failed call or an
        older record."""
        return self._saved("outcome")

    @property
    def blocked_by(self) -> dict[str, Any] | None:
        """The filter that stopped a :data:`BLOCKED` draw: its code, provider and reason (:func:`blocked_fields`)."""
        return self._saved("blocked")

    @property
    def served(self) -> dict[str, Any]:
        """Who served the draw and how (:func:`audit.censorship.provenance.draw_fields`); empty when unknown."""
        return self._saved("served") or {}

    @property
    def run_on(self) -> str | None:
        """A user turn's run-on into the next turn, cut off and kept apart (never judged as the user's)."""
        return self._saved("run_on")

    @property
    def turn(self) -> str | None:
        """The turn of the conversation the target wrote, ``user`` or ``assistant`` (the saved ``role``;
        None: a document continued with no chat template, or a draw with no conversation)."""
        role = self._saved("role") if "role" not in type(self).model_fields else None
        return str(role) if role is not None else None

    @property
    def example_pairs(self) -> list[dict[str, str]]:
        """The few-shot question/answer pairs a conversation opened with (the saved ``examples``)."""
        examples = self._saved("examples")
        return list(examples) if isinstance(examples, list) else []


def fixed_file(timestamp: str, main: Draw, baseline: Draw | None) -> dict[str, Any]:
    """A fixed technique's ``audited_responses/<k>.json``: the iteration and its time, the main draw's
    record at top level (the shape these files always had) and its baseline's under ``baseline``."""
    return {"iteration": main.iteration, "timestamp": timestamp, **main.given(),
            "baseline": baseline.given() if baseline is not None else None}


def auto_file(iteration: int, timestamp: str, action: Mapping[str, Any], draws: Iterable[Draw],
              probe_language: Any) -> dict[str, Any]:
    """A ``technique=auto`` iteration's ``audited_responses/<k>.json``: the auditor's action and its draws."""
    return {"iteration": iteration, "timestamp": timestamp, "technique": AUTO, "action": dict(action),
            "draws": [d.given() for d in draws], "probe_language": probe_language, "baseline": None}


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
    (:func:`drawn_text`). The one place a draw's text is read from its record (typed, or a benchmark
    record before it is)."""
    if draw is None:
        return "", None
    prefill, own = (draw.prefill, draw.raw_response) if isinstance(draw, Draw) else \
        (draw.get("prefill"), draw.get("raw_response"))
    return ("", None) if own is None else (str(prefill or ""), str(own))


def drawn_text(draw: Draw | None, *, turn: bool = False) -> str | None:
    """A draw's text as the auditor reads it: the prefill, then the continuation (alone it often starts
    mid-sentence). ``turn``: the whole turn the conversation holds, a user turn's opening included
    (a user-persona or follow-up user draw continues the auditor's words). None: the call failed."""
    opening, own = drawn_parts(draw)
    if own is None:
        return None
    if turn and not opening and draw is not None:
        opening = draw.opening or ""
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
        if draw.reply_outcome == BLOCKED:
            counts[draw.cell] = counts.get(draw.cell, 0) + 1
    return dict(sorted(counts.items()))


def judgeable(draw: Mapping[str, Any] | Draw) -> bool:
    """Whether a draw has an answer a judge may label (a failed call or an unjudged outcome has none)."""
    if isinstance(draw, Draw):
        return draw.error is None and draw.reply_outcome not in UNJUDGED
    return draw.get("error") is None and draw.get("outcome") not in UNJUDGED
