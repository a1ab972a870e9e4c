"""What an epistemic run writes, typed: :class:`Card` (``cards.jsonl``), :class:`Answer` (a row of
``results.jsonl`` or of the ``answers.jsonl`` journal) and :class:`Metrics` (``metrics.json``).

As for the audit's draws (:mod:`audit.record.draws`), the files are not rewritten: the writers' dicts
(and so every exact-bytes test) stay as they were, and records are typed on read, upgraded from
every earlier shape so an old run dir still loads:

- a card without ``condition`` is an ``in_context`` card (conditions came later); a U card without
  ``u_kind`` rests on the open world (the kinds came later), and only a U card has one;
- an answer without the card's fields (the original project's rows: id, gold, pred, system) takes
  them from its card when the card is known (:meth:`Answer.of`), and its label from its gold;
- a system's metrics without ``conditions`` (before conditions) have none; a system asked under
  several conditions has no pooled figures (``metrics`` None), only each condition's.

The models allow extra fields, so a field a newer writer adds (a system's extras, a new rate)
passes through and is kept. The vocabulary here is the record's (labels, golds, the default
condition); what the figures mean is :mod:`audit.epistemic.metrics`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import (BaseModel, ConfigDict, Field, RootModel, StrictStr, ValidationError, ValidationInfo,
                      field_validator, model_validator)

Record = TypeVar("Record", bound=BaseModel)

GOLD_OF_LABEL = {"E": "YES", "C": "NO", "U": "UNKNOWN"}
"""A card's label (entailed, contradicted, unknown) and the answer that is right for it."""
LABEL_OF_GOLD = {gold: label for label, gold in GOLD_OF_LABEL.items()}
IN_CONTEXT = "in_context"
"""The condition of a card as generated (cards written before conditions carry none)."""
OPEN_WORLD = "open_world"
"""What a U card's UNKNOWN rests on when the card does not say (cards written before the kinds)."""


class Claim(BaseModel):
    """The claim a card asks about, as IRIs."""

    model_config = ConfigDict(extra="forbid")
    subj: str
    pred: str
    obj: str

    def triple(self) -> tuple[str, str, str]:
        return self.subj, self.pred, self.obj


class Card(BaseModel):
    """One card: the facts a system is shown, the question, the right answer and why."""

    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)
    id: str
    gold: str | None = None
    label: str | None = None
    """None only in a cards file read for its texts (a report's drill-down); one a run answers has both."""
    facts: list[str] = Field(default_factory=list)
    question: str = ""
    claim: Claim | None = None
    reason: str | None = None
    suite: str | None = None
    u_kind: str | None = None
    condition: str = IN_CONTEXT
    prior_label: str | None = None
    """A counterfactual or closed-book card's label in the graph (its own ``label`` is the context's)."""

    def claim_triple(self) -> tuple[str, str, str]:
        """The claim as (subject, predicate, object) IRIs (cards a run answers always have one)."""
        if self.claim is None:
            raise ValueError(f"card {self.id} has no claim")
        return self.claim.triple()

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        data["condition"] = data.get("condition") or IN_CONTEXT
        data["u_kind"] = (data.get("u_kind") or OPEN_WORLD) if data.get("label") == "U" else None
        return data


class CardToAnswer(Card):
    """A card as a run reads it to answer (a ``cards.jsonl`` given by ``cards.path``, or a resumed
    run's own): every field a system is asked and scored on present and of its type (a string is
    not a number here), the label and gold one of the pairs, and, when the reader names its known
    suites (validation context ``{"suites": ...}``), the suite one of them. The one check of such
    a file; :func:`audit.epistemic.cards.read_cards` adds only what spans lines (duplicate ids)."""

    id: StrictStr
    gold: StrictStr
    label: StrictStr
    facts: list[StrictStr]
    question: StrictStr
    claim: Claim
    reason: StrictStr
    suite: StrictStr

    @field_validator("label")
    @classmethod
    def _label_of_gold(cls, label: str, info: ValidationInfo) -> str:
        gold = info.data.get("gold")  # validated first (the fields' order); absent when it failed
        if gold is not None and GOLD_OF_LABEL.get(label) != gold:
            pairs = ", ".join(f"{one}/{other}" for one, other in GOLD_OF_LABEL.items())
            raise ValueError(f"label {label!r} / gold {gold!r} is not one of {pairs}")
        return label

    @field_validator("suite")
    @classmethod
    def _known_suite(cls, suite: str, info: ValidationInfo) -> str:
        known = (info.context or {}).get("suites")
        if known is not None and suite not in known:
            raise ValueError(f"unknown suite {suite!r} (known: {', '.join(known)})")
        return suite


class Answer(BaseModel):
    """One system's answer to one card, as a results row: the card's id, label and breakdown keys
    beside the system's ``pred`` (None exactly when ``error`` says why: a failed call or an
    unparsable reply, counted as an error, never as an abstention)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, coerce_numbers_to_str=True)
    id: str
    system: str
    gold: str
    pred: str | None = None
    passed: bool | None = Field(default=None, alias="pass")
    label: str | None = None
    suite: str | None = None
    u_kind: str | None = None
    condition: str = IN_CONTEXT
    prior_label: str | None = None
    raw_output: str | None = None
    reason: str | None = None
    error: str | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any], card: Card | None = None) -> Answer:
        """A saved row, typed; the fields it lacks come from its ``card`` (when known), its label
        from its gold."""
        known = card.model_dump(include={"label", "suite", "u_kind", "condition", "prior_label"}) if card else {}
        data = {**known, **{k: v for k, v in row.items() if v is not None or k not in known}}
        data["condition"] = data.get("condition") or IN_CONTEXT
        if data.get("label") is None and data.get("gold") in LABEL_OF_GOLD:
            data["label"] = LABEL_OF_GOLD[data["gold"]]
        return typed(cls, data, f"answer {row.get('id', '?')!r}")


class SystemMetrics(BaseModel):
    """One system's figures (or one suite's, U kind's, condition's): counts, the 3x3 table and the
    rates (each a Wilson interval with its ``k`` and ``n``, or None when its denominator is 0)."""

    model_config = ConfigDict(extra="allow")
    mapping: str | None = None
    n_rows: int = 0
    n_scored: int = 0
    n_errors: int = 0
    errors_by_label: dict[str, int] = Field(default_factory=dict)
    table: dict[str, dict[str, int]] | None = None
    confusion_matrix: dict[str, int] | None = None
    totals: dict[str, int] | None = None
    metrics: dict[str, dict[str, Any] | None] | None = None
    """The rates; None for a system asked under several conditions (never pooled: see ``conditions``)."""
    prior_answer: dict[str, Any] | None = None
    suites: dict[str, SystemMetrics] = Field(default_factory=dict)
    u_kinds: dict[str, SystemMetrics] = Field(default_factory=dict)
    conditions: dict[str, SystemMetrics] = Field(default_factory=dict)

    @property
    def pooled(self) -> bool:
        """Whether this entry has figures of its own (one condition), not only each condition's."""
        return self.metrics is not None

    def rate(self, name: str) -> dict[str, Any] | None:
        return (self.metrics or {}).get(name)


class Metrics(RootModel[dict[str, SystemMetrics]]):
    """``metrics.json``: each system's figures, by system."""

    @classmethod
    def read(cls, data: Any) -> Metrics:
        """``metrics.json``'s content, typed; a ValueError of one line naming the first bad field."""
        return typed(cls, data, "metrics.json")

    def by_condition(self) -> list[tuple[str, str, SystemMetrics]]:
        """``(system, condition, figures)`` of every unit a comparison counts: a system asked under
        several conditions once per condition (never pooled), else the system once."""
        out = []
        for system, whole in self.root.items():
            if len(whole.conditions) > 1:
                out += [(system, condition, m) for condition, m in whole.conditions.items()]
            else:
                out.append((system, next(iter(whole.conditions), IN_CONTEXT), whole))
        return out

    def items(self) -> Iterable[tuple[str, SystemMetrics]]:
        return self.root.items()


def cards_by_id(rows: Iterable[Mapping[str, Any]]) -> dict[str, Card]:
    """Saved cards, typed, by id (a line without an id is no card)."""
    return {str(c["id"]): typed(Card, c, f"cards.jsonl card {c['id']}") for c in rows if "id" in c}


def typed(model: type[Record], data: Any, where: str, context: Mapping[str, Any] | None = None) -> Record:
    """``data`` as ``model`` (``context`` passed to its validators); a damaged record is a ValueError
    of one line naming ``where`` and the first bad field (a reader shows it as the run's problem,
    never a page of validation errors), with a validator's own words as it wrote them."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "the record"
        said = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
        raise ValueError(f"{where}: {field}: {said}") from None
