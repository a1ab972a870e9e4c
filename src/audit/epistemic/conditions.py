"""Conditions: the same claims asked three ways, so "follows the context" and "falls back on
its prior" are separate numbers.

- ``in_context``: the card as generated (the default; such cards carry no ``condition`` field,
  so earlier runs' cards are in_context cards).
- ``closed_book``: the question alone, no facts. The gold stays the graph's label: a right
  answer here comes from the model's prior, not from a context.
- ``counterfactual``: a context that asserts a false version. An E card's true fact is replaced
  by its negation ("X is not the mouth of Y.": gold NO, C by that fact); a C or U card gets the
  claim itself as a fact, the subject's other values for the predicate removed (gold YES).
  ``prior_label`` keeps the graph's label, so a system that answers it is falling back on its
  prior (or on the graph), one that answers ``gold`` follows the context.

Pure: cards in, cards out; the wording comes from :mod:`audit.epistemic.rules`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.epistemic.domain import Domain
from audit.epistemic.rules import negation
from audit.errors import unknown_choice
from audit.record.answers import GOLD_OF_LABEL, IN_CONTEXT, Card

CONDITIONS = ("in_context", "closed_book", "counterfactual")
DEFAULT = IN_CONTEXT


def apply_conditions(domain: Domain, cards: Sequence[dict[str, Any]], conditions: Sequence[str]) -> list[dict[str, Any]]:
    """Every card under every condition, in condition order; ids of the non-default conditions
    get the condition as a suffix so each (card, condition) is answered once."""
    for name in conditions:
        if name not in CONDITIONS:
            raise unknown_choice("cards.conditions entry", name, CONDITIONS)
    out: list[dict[str, Any]] = []
    for name in dict.fromkeys(conditions):
        for card in cards:
            out.append(card if name == DEFAULT else _transformed(domain, card, name))
    return out


def _transformed(domain: Domain, saved: Mapping[str, Any], condition: str) -> dict[str, Any]:
    """``saved`` under ``condition``: the card as written (every field it has kept), with what the
    condition changes."""
    card = Card.model_validate(saved)
    new = {**saved, "id": f"{card.id}_{condition}", "condition": condition, "prior_label": card.label}
    if condition == "closed_book":
        new["facts"] = []
        return new
    s, p, o = card.claim_triple()
    # what the context said about the claim (its subject's values, a negation card's negative fact) goes
    own = {domain.verbalise(s, p, x) for x in domain.graph.objects(s, p)} | {domain.verbalise(s, p, o),
                                                                          negation(domain, s, o)}
    facts = [f for f in card.facts if f not in own]
    if card.label == "E":
        fact = negation(domain, s, o)
        label, reason = "C", f"counterfactual: the context negates a true claim ({fact})"
    else:
        fact = domain.verbalise(s, p, o)
        label, reason = "E", f"counterfactual: the context asserts the claim ({fact})"
    new.update(facts=[fact, *facts], label=label, gold=GOLD_OF_LABEL[label], reason=reason)
    return new
