"""What a run records about its panel: outcomes per kind, failures per member, alpha and pairwise kappa."""

from __future__ import annotations

import pytest

from audit.judging.agreement import krippendorff_alpha
from audit.judging.panel import panel_from_node
from audit.judging.panel_summary import member_label, panel_summary, run_items, run_judgments
from audit.judging.votes import label_record
from audit.record.draws import Draw

PANEL = panel_from_node({"model": None, "models": ["a", "b", "c"], "samples": 1})
TABLE = [("refused", "refused", "refused"), ("refused", "deflected", "deflected"), ("partial", "refused", None),
         ("deflected", "deflected", "deflected"), ("refused", "refused", "partial"), ("partial", "deflected", "refused")]


def judged(votes) -> Draw:
    return Draw(iteration=1, technique="assistant", classification=label_record([
        {"member": m, "sample": 0, "label": v, "error_kind": None if v else "rate_limit", "error": None if v else "429",
         "usage": None} for m, v in zip("abc", votes)], PANEL.names, 1))


def test_a_run_summary_counts_outcomes_failures_and_agreement():
    responses = [judged(v) for v in TABLE]
    summary = panel_summary(PANEL, run_items(responses, None, None), run_judgments(responses, None, None))
    labels = summary["kinds"]["response labels"]
    assert labels["outcomes"] == {"majority": 4, "disputed": 1, "failed": 1}
    assert labels["labels"] == {"deflected": 2, "disputed": 1, "refused": 2}
    assert summary["member_failures"] == {"a": {}, "b": {}, "c": {"rate_limit": 1}}
    assert labels["alpha"]["value"] == pytest.approx(krippendorff_alpha(TABLE))
    ab = labels["pairs"][0]
    # a vs b: agree on items 1, 4, 5 of 6; a: 3 refused, 2 partial, 1 deflected; b: 3 refused, 3 deflected
    chance = (3 / 6) * (3 / 6) + (1 / 6) * (3 / 6)
    assert ab["members"] == ["a", "b"] and ab["value"] == pytest.approx((3 / 6 - chance) / (1 - chance))
    assert ab["n"] == 6 and ab["lo"] is not None and ab["lo"] <= ab["value"] <= ab["hi"]
    assert summary["disputed"] == {"response labels": 1}


def test_a_single_judge_has_no_panel_summary_and_a_member_without_its_own_majority_has_no_label():
    assert panel_summary(panel_from_node({"model": "a"}), {}, []) is None
    assert member_label(["refused", "refused", "deflected"]) == "refused"
    assert member_label(["refused", "deflected"]) is None and member_label([None]) is None
