"""Typed epistemic records: cards, answers and metrics.json read through :mod:`audit.record.answers`,
upgraded from every earlier shape: the legacy fixture (tests/runs/legacy/epistemic_ok, written before
conditions, U kinds and these types) loads through them, as do the original project's bare rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.record.answers import Answer, Card, CardToAnswer, Metrics, typed
from audit.runs.loading import load_runs

LEGACY = Path(__file__).resolve().parents[1] / "runs" / "legacy"


def test_the_legacy_epistemic_run_loads_through_the_typed_records():
    (run,) = [r for r in load_runs([LEGACY]) if r.path.name == "epistemic_ok"]
    saved_cards = [json.loads(line) for line in (run.path / "cards.jsonl").read_text().splitlines()]
    saved_rows = [json.loads(line) for line in (run.path / "results.jsonl").read_text().splitlines()]
    assert all("condition" not in c and "u_kind" not in c for c in saved_cards)  # written before both
    cards = run.cards
    assert list(cards) == [c["id"] for c in saved_cards] and all(isinstance(c, Card) for c in cards.values())
    assert {c.condition for c in cards.values()} == {"in_context"}
    assert {c.label: c.u_kind for c in cards.values()} == {"E": None, "C": None, "U": "open_world"}
    assert [c.claim_triple() for c in cards.values()] == \
        [(c["claim"]["subj"], c["claim"]["pred"], c["claim"]["obj"]) for c in saved_cards]
    answers = run.answers
    assert [(a.id, a.system, a.pred, a.passed) for a in answers] == \
        [(r["id"], r["system"], r["pred"], r["pass"]) for r in saved_rows]
    assert [a.u_kind for a in answers] == [cards[a.id].u_kind for a in answers]  # from the card
    assert {a.condition for a in answers} == {"in_context"}
    metrics = Metrics.read(json.loads((run.path / "metrics.json").read_text()))
    ((system, condition, figures),) = metrics.by_condition()
    saved = json.loads((run.path / "metrics.json").read_text())[system]
    assert (system, condition, figures.n_rows) == ("kg_oracle", "in_context", saved["n_rows"])
    assert figures.rate("AP") == saved["metrics"]["AP"] and figures.pooled


def test_an_original_row_takes_its_cards_fields_and_its_label_from_its_gold():
    bare = {"id": 7, "gold": "UNKNOWN", "pred": "NO", "system": "llm"}  # the original project's columns
    alone = Answer.of(bare)
    assert (alone.id, alone.label, alone.condition, alone.u_kind, alone.passed) == ("7", "U", "in_context", None, None)
    card = Card.model_validate({"id": "7", "gold": "UNKNOWN", "label": "U", "suite": "held_out",
                                "u_kind": "held_out", "condition": "counterfactual", "prior_label": "E"})
    typed = Answer.of(bare, card)
    assert (typed.suite, typed.u_kind, typed.condition, typed.prior_label) == \
        ("held_out", "held_out", "counterfactual", "E")
    own = Answer.of({**bare, "condition": "closed_book", "note": "kept"}, card)
    assert own.condition == "closed_book" and own.model_extra == {"note": "kept"}  # the row's own field wins


def test_a_system_asked_under_several_conditions_is_never_pooled():
    one = {"n_rows": 2, "n_scored": 2, "n_errors": 0, "metrics": {"AP": {"value": 1.0, "lo": 0.3, "hi": 1.0,
                                                                         "k": 2, "n": 2}}}
    metrics = Metrics.read({"oracle": {"n_rows": 4, "n_scored": 4, "n_errors": 0,
                                       "conditions": {"closed_book": one, "in_context": one}},
                            "llm": {**one, "conditions": {"in_context": one}}})
    assert [(s, c) for s, c, _ in metrics.by_condition()] == [("oracle", "closed_book"), ("oracle", "in_context"),
                                                             ("llm", "in_context")]
    assert not metrics.root["oracle"].pooled and metrics.root["oracle"].rate("AP") is None


@pytest.mark.parametrize("data, where", [
    ({"llm": [1, 2]}, "metrics.json: llm: "),
    ({"llm": {"n_rows": "many"}}, "metrics.json: llm.n_rows: "),
])
def test_a_damaged_metrics_file_is_one_line_naming_the_field(data, where):
    with pytest.raises(ValueError) as caught:
        Metrics.read(data)
    assert str(caught.value).startswith(where) and "\n" not in str(caught.value)


def test_a_damaged_answer_row_is_one_line_naming_it():
    with pytest.raises(ValueError) as caught:
        Answer.of({"id": "CARD_E_1", "gold": "YES", "pred": "YES"})  # no system
    assert str(caught.value) == "answer 'CARD_E_1': system: Field required"


def test_a_card_to_answer_is_strict_where_a_card_read_for_its_texts_is_not():
    """A report reads a cards file for its texts (labels may be absent, numbers pass as ids); a run
    answers only whole cards, their label and gold one pair, their suite one the reader knows."""
    whole = {"id": "c1", "gold": "NO", "label": "C", "facts": ["f"], "question": "q?", "reason": "r",
             "claim": {"subj": "s", "pred": "p", "obj": "o"}, "suite": "standard", "note": "kept"}
    card = CardToAnswer.model_validate(whole, context={"suites": ("standard",)})
    assert (card.claim_triple(), card.condition, card.u_kind, card.model_extra) == \
        (("s", "p", "o"), "in_context", None, {"note": "kept"})
    assert Card.model_validate({"id": 3, "question": "q?"}).id == "3"
    assert CardToAnswer.model_validate({**whole, "suite": "mine"}).suite == "mine"  # no suites named: any
    for bad, said in [({"id": 3}, "id: Input should be a valid string"),
                      ({"label": "U"}, "label: label 'U' / gold 'NO' is not one of E/YES, C/NO, U/UNKNOWN"),
                      ({"suite": "mine"}, "suite: unknown suite 'mine' (known: standard)")]:
        with pytest.raises(ValueError) as caught:
            typed(CardToAnswer, {**whole, **bad}, "cards.jsonl line 4", context={"suites": ("standard",)})
        assert str(caught.value) == f"cards.jsonl line 4: {said}"
