"""Conditions: closed_book (question alone), in_context (the card), counterfactual (the context
asserts a false version), with prior vs context kept apart."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from audit.epistemic.cards import generate_cards
from audit.epistemic.conditions import apply_conditions
from audit.epistemic.domain import load_domain
from audit.epistemic.metrics import compute_metrics
from audit.epistemic.pipeline import result_row
from audit.epistemic.systems.base import Reply
from audit.errors import UserError
from audit.paths import CONF_DIR
from audit.record.answers import Card


@pytest.fixture(scope="module")
def domain():
    return load_domain(OmegaConf.load(f"{CONF_DIR}/domain/rivers.yaml"))


@pytest.fixture(scope="module")
def cards(domain):
    base = generate_cards(domain, num_per_type=6, seed=1, suites=("standard",))
    return base, apply_conditions(domain, base, ["in_context", "closed_book", "counterfactual"])


def test_in_context_cards_are_unchanged_and_others_get_their_own_ids(cards) -> None:
    base, every = cards
    assert every[: len(base)] == base and {Card.model_validate(c).condition for c in base} == {"in_context"}
    assert len(every) == 3 * len(base) and len({c["id"] for c in every}) == len(every)


def test_closed_book_is_the_question_alone_with_the_graph_label(cards) -> None:
    base, every = cards
    closed = [c for c in every if c.get("condition") == "closed_book"]
    for original, c in zip(base, closed):
        assert c["facts"] == [] and c["question"] == original["question"]
        assert (c["label"], c["gold"], c["prior_label"]) == (original["label"], original["gold"], original["label"])


def test_counterfactual_contexts_assert_the_false_version(domain, cards) -> None:
    base, every = cards
    flipped = [c for c in every if c.get("condition") == "counterfactual"]
    for original, c in zip(base, flipped):
        s, p, o = (original["claim"][k] for k in ("subj", "pred", "obj"))
        stated, negated = domain.verbalise(s, p, o), f"{domain.label(o)} is not the mouth of {domain.label(s)}."
        assert c["prior_label"] == original["label"]
        if original["label"] == "E":
            assert (c["label"], c["gold"]) == ("C", "NO") and negated in c["facts"] and stated not in c["facts"]
        else:
            assert (c["label"], c["gold"]) == ("E", "YES") and stated in c["facts"]
            # the subject's real value is gone, so the context is consistent with the claim
            assert not [f for f in c["facts"] if f.startswith(f"{domain.label(s)} has mouth ") and f != stated]


def test_metrics_keep_conditions_apart_and_measure_falling_back_on_the_prior(domain, cards) -> None:
    _, every = cards
    # a system that always answers the graph's label: perfect in context, never follows a counterfactual
    rows = [result_row(Card.model_validate(c), "prior", Reply(pred={"E": "YES", "C": "NO", "U": "UNKNOWN"}[c.get("prior_label", c["label"])],
                                          reason="")) for c in every]
    m = compute_metrics(rows)["prior"]["conditions"]
    assert sorted(m) == ["closed_book", "counterfactual", "in_context"]
    assert m["in_context"]["metrics"]["accuracy"]["value"] == 1 and m["closed_book"]["metrics"]["accuracy"]["value"] == 1
    assert m["counterfactual"]["metrics"]["accuracy"]["value"] == 0
    assert m["counterfactual"]["prior_answer"]["value"] == 1 and "prior_answer" not in m["in_context"]


def test_an_unknown_condition_is_a_one_line_error(domain, cards) -> None:
    with pytest.raises(UserError, match="closed_book"):
        apply_conditions(domain, cards[0], ["closed_boook"])


def test_a_counterfactual_negation_card_drops_its_negative_fact(domain) -> None:
    base = generate_cards(domain, num_per_type=4, seed=3, suites=("negation",))
    for original, c in zip(base, apply_conditions(domain, base, ["counterfactual"])):
        s, o = original["claim"]["subj"], original["claim"]["obj"]
        if original["label"] == "C":
            assert f"{domain.label(o)} is not the mouth of {domain.label(s)}." not in c["facts"]
            assert c["gold"] == "YES"
