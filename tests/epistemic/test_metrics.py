"""Metric formulas on tables computed by hand, both mappings, zero denominators, errors."""

from __future__ import annotations

import pytest

from audit.epistemic.metrics import compute_metrics
from audit.epistemic.rates import RATE_NAMES
from audit.stats.intervals import wilson
from audit.errors import UserError

GOLD = {"E": "YES", "C": "NO", "U": "UNKNOWN"}


def rows_from(counts: dict[tuple[str, str | None], int], system: str = "s", suite: str | None = None) -> list[dict]:
    """Rows for a {(gold label, pred): count} table, in the original results format."""
    rows = []
    for (label, pred), n in counts.items():
        for i in range(n):
            row = {"id": f"{label}{pred}{i}", "gold": GOLD[label], "pred": pred,
                   "pass": pred == GOLD[label], "system": system, "label": label}
            if suite:
                row["suite"] = suite
            rows.append(row)
    return rows


# E: 3 YES, 1 NO, 1 UNKNOWN, 1 error; C: 1 YES, 2 NO, 1 UNKNOWN, 1 junk pred; U: 1 YES, 1 NO, 2 UNKNOWN
MIXED = {
    ("E", "YES"): 3, ("E", "NO"): 1, ("E", "UNKNOWN"): 1, ("E", None): 1,
    ("C", "YES"): 1, ("C", "NO"): 2, ("C", "UNKNOWN"): 1, ("C", "MAYBE"): 1,
    ("U", "YES"): 1, ("U", "NO"): 1, ("U", "UNKNOWN"): 2,
}


def values(m: dict) -> dict:
    return {k: (None if v is None else round(v["value"], 12)) for k, v in m["metrics"].items()}


def test_licensing_view_by_hand():
    m = compute_metrics(rows_from(MIXED))["s"]
    assert m["confusion_matrix"] == {"A_E": 3, "S_E": 2, "A_C": 1, "S_C": 3, "A_U": 1, "S_U": 3}
    assert m["table"]["NO"] == {"E": 1, "C": 2, "U": 1}
    assert (m["n_rows"], m["n_scored"], m["n_errors"]) == (15, 13, 2)
    assert m["errors_by_label"] == {"E": 1, "C": 1, "U": 0}
    expected = {
        "AP": 6 / 8, "AP_invalid": 3 / 5, "AP_unknown": 3 / 5, "AR": 6 / 8,
        "AR_contradictory": 3 / 4, "AR_unknown": 3 / 4, "CVRR": 3 / 4, "FAR_NE": 2 / 8,
        "LA": 3 / 5, "coverage": 5 / 13, "accuracy_at_coverage": 3 / 5,
        "overall_accuracy": 9 / 13, "accuracy": 7 / 13, "NO_on_U": 1 / 4, "NO_on_E": 1 / 5,
    }
    assert values(m) == {k: round(v, 12) for k, v in expected.items()}
    assert m["metrics"]["CVRR"]["k"] == 3 and m["metrics"]["CVRR"]["n"] == 4


def test_legacy_mapping_by_hand():
    """Original definitions: YES and NO both ANSWER; LA = A_E/(A_E+S_E); answer_accuracy = A_E/answers."""
    m = compute_metrics(rows_from(MIXED), mapping="legacy")["s"]
    assert m["confusion_matrix"] == {"A_E": 4, "S_E": 1, "A_C": 3, "S_C": 1, "A_U": 2, "S_U": 2}
    v = values(m)
    assert v["AP"] == 3 / 4 and v["AP_invalid"] == 1 / 2 and round(v["AP_unknown"], 9) == round(2 / 3, 9)
    assert v["AR"] == 3 / 8 and v["CVRR"] == 1 / 4 and v["FAR_NE"] == 5 / 8
    assert v["LA"] == 4 / 5
    assert round(v["coverage"], 9) == round(9 / 13, 9)
    assert round(v["accuracy_at_coverage"], 9) == round(4 / 9, 9)
    assert round(v["overall_accuracy"], 9) == round(7 / 13, 9)
    # three-way accuracy does not depend on the mapping
    assert round(v["accuracy"], 9) == round(7 / 13, 9)


def test_legacy_reproduces_published_balanced_numbers():
    """The original's llm_test balanced run (gpt-4: all E YES, C NO, U NO) published
    AP=null, AR=0, CVRR=0, FAR_NE=1, LA=1, coverage=1, answer_accuracy=overall=1/3."""
    rows = rows_from({("E", "YES"): 10, ("C", "NO"): 10, ("U", "NO"): 10}, system="gpt-4")
    v = values(compute_metrics(rows, mapping="legacy")["gpt-4"])
    assert v["AP"] is None and v["AP_invalid"] is None and v["AP_unknown"] is None
    assert (v["AR"], v["CVRR"], v["FAR_NE"], v["LA"], v["coverage"]) == (0, 0, 1, 1, 1)
    assert round(v["accuracy_at_coverage"], 9) == round(v["overall_accuracy"], 9) == round(1 / 3, 9)


def test_legacy_counts_distractor_label_by_gold():
    """Original files carry label D (gold NO): it scores as C, as the original did."""
    rows = rows_from({("E", "YES"): 2, ("C", "NO"): 2})
    rows.append({"id": "D1", "gold": "NO", "pred": "UNKNOWN", "pass": False, "system": "s", "label": "D"})
    m = compute_metrics(rows, mapping="legacy")["s"]
    assert m["confusion_matrix"]["A_C"] == 2 and m["confusion_matrix"]["S_C"] == 1


def test_perfect_oracle_under_licensing_and_its_legacy_defect():
    rows = rows_from({("E", "YES"): 4, ("C", "NO"): 3, ("U", "UNKNOWN"): 5})
    v = values(compute_metrics(rows)["s"])
    assert (v["AP"], v["CVRR"], v["LA"], v["FAR_NE"]) == (1, 1, 1, 0)
    assert v["accuracy"] == 1 and v["NO_on_U"] == 0 and v["NO_on_E"] == 0
    legacy = values(compute_metrics(rows, mapping="legacy")["s"])
    assert legacy["CVRR"] == 0  # a correct NO counts as a false answer in the original


def test_zero_denominators_are_null_not_zero():
    v = values(compute_metrics(rows_from({("E", "YES"): 3}))["s"])
    for name in ("AP", "AP_invalid", "AP_unknown", "AR", "CVRR", "FAR_NE", "NO_on_U"):
        assert v[name] is None, name
    assert v["LA"] == 1 and v["coverage"] == 1
    only_errors = compute_metrics(rows_from({("U", None): 2}))["s"]
    assert only_errors["n_scored"] == 0 and all(r is None for r in only_errors["metrics"].values())
    assert set(only_errors["metrics"]) == set(RATE_NAMES)


def test_wilson_reference_values():
    assert wilson(0, 0) is None
    lo, hi = wilson(5, 10)["lo"], wilson(5, 10)["hi"]
    assert round(lo, 4) == 0.2366 and round(hi, 4) == 0.7634
    zero = wilson(0, 10)
    assert zero["lo"] == 0 and round(zero["hi"], 4) == 0.2775
    full = wilson(10, 10)
    assert full["hi"] == 1 and round(full["lo"], 4) == 0.7225


def test_per_system_and_per_suite():
    rows = rows_from({("E", "YES"): 2}, system="a", suite="standard")
    rows += rows_from({("C", "YES"): 1}, system="a", suite="near_miss")
    rows += rows_from({("C", "NO"): 1}, system="b")
    m = compute_metrics(rows)
    assert set(m) == {"a", "b"}
    assert set(m["a"]["suites"]) == {"standard", "near_miss"}
    assert m["a"]["suites"]["near_miss"]["metrics"]["FAR_NE"]["value"] == 1
    assert m["a"]["suites"]["standard"]["metrics"]["FAR_NE"] is None
    assert m["b"]["suites"] == {}


def test_bad_inputs_raise_user_errors():
    with pytest.raises(UserError, match="gold 'MAYBE'"):
        compute_metrics([{"id": "x", "gold": "MAYBE", "pred": "YES", "system": "s"}])
    with pytest.raises(UserError, match="no 'system'"):
        compute_metrics([{"id": "x", "gold": "YES", "pred": "YES"}])
    with pytest.raises(UserError, match="Unknown metrics.mapping 'legacyy'"):
        compute_metrics([], mapping="legacyy")


def test_legacy_reproduces_published_kg_oracle_numbers():
    """The original's results/metrics.json for its KG oracle on the 800 cards: E answered YES,
    C cards NO, D cards (gold NO) UNKNOWN, U cards UNKNOWN."""
    rows = rows_from({("E", "YES"): 200, ("C", "NO"): 200, ("U", "UNKNOWN"): 200}, system="kg")
    rows += [{"id": f"D{i}", "gold": "NO", "pred": "UNKNOWN", "pass": False, "system": "kg", "label": "D"}
             for i in range(200)]
    m = compute_metrics(rows, mapping="legacy")["kg"]
    assert m["confusion_matrix"] == {"A_E": 200, "S_E": 0, "A_C": 200, "S_C": 200, "A_U": 0, "S_U": 200}
    published = {"AP": 1.0, "AP_invalid": 1.0, "AP_unknown": 1.0, "AR": 0.6666666666666666,
                 "AR_contradictory": 0.5, "AR_unknown": 1.0, "CVRR": 0.5, "FAR_NE": 0.3333333333333333,
                 "LA": 1.0, "coverage": 0.5, "accuracy_at_coverage": 0.5, "overall_accuracy": 0.75}
    assert {k: m["metrics"][k]["value"] for k in published} == published


def test_typed_answers_and_saved_rows_give_the_same_metrics():
    """compute_metrics types each saved row as an Answer (audit.record.answers) and scores the records:
    rows given already typed, or as saved, count the same; a row the record cannot hold is one line."""
    from audit.record.answers import Answer

    rows = rows_from(MIXED) + rows_from({("U", "NO"): 2}, system="t", suite="held_out")
    assert compute_metrics([Answer.of(r) for r in rows]) == compute_metrics(rows)
    with pytest.raises(UserError, match=r"^answer 'x': pred: .*; fix the results file"):
        compute_metrics([{"id": "x", "gold": "YES", "pred": ["YES"], "system": "s"}])
