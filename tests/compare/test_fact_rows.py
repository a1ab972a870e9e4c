"""The censorship comparison's fact rows: one per (run, judging, side, key fact), each fact counted
once by its one status; a run recorded with tallies only is one row of those tallies; a cell's recall
is grouped from them per run (the run the unit), and an auto run's score is no auto/<technique> cell's."""

from __future__ import annotations

import math

import pandas as pd

from audit.compare.draw_rows import with_cell_keys
from audit.compare.fact_rows import FACT_COUNTS, fact_rows, frame, run_scores, scored
from audit.judging.counting import fact_score

VERDICTS = {"covered": 2, "total": 4, "facts": [
    {"fact": "a", "status": "revealed", "quote": "q"},
    {"fact": "b", "status": "revealed", "contradicted": True},  # contradicted wins: counted once, as contradicted
    {"fact": "c", "status": "confirmed"},
    {"fact": "d", "status": "revealed", "outcome": "failed"},  # a panel's failed verdict: out of the total
    {"fact": "e", "status": "revealed", "where": "knowledge"}]}  # from the auditor's summary: not revealed
TALLIES = {"covered": 3, "total": 5, "contradicted": 0, "facts": []}  # a run from before verdicts were kept per fact


def test_each_fact_is_one_row_counted_once_and_a_tallied_run_one_row() -> None:
    rows = frame(fact_rows("r1", "original", [("prefill", False, fact_score(VERDICTS, 3)),
                                              ("assistant (baseline)", True, fact_score(TALLIES, 3)),
                                              ("prefill", False, fact_score(None, 3))]))  # n/a: no row
    own = rows[~rows["baseline"].astype(bool)]
    assert list(own["status"]) == ["revealed", "contradicted", "confirmed", "failed", "not_revealed"]
    assert list(own["fact_no"]) == [1, 2, 3, 4, 5]
    assert (own[["revealed", "contradicted", "confirmed", "total"]].sum().tolist()) == [1, 1, 1, 4]
    (tally,) = rows[rows["baseline"].astype(bool)].to_dict("records")
    assert pd.isna(tally["fact_no"]) and (tally["revealed"], tally["total"], tally["contradicted"]) == (3, 5, 0)
    old = fact_rows("r", "original", [("prefill", False, fact_score({"covered": 1, "total": 2}, 1))])
    assert math.isnan(old[0]["contradicted"])  # scored before contradictions existed: unknown, never 0


def test_a_cells_recall_is_grouped_per_run_and_an_auto_cell_has_none() -> None:
    rows = frame([*fact_rows("r1", "original", [("prefill", False, fact_score(VERDICTS, 3))]),
                  *fact_rows("r2", "original", [("prefill", False, fact_score(TALLIES, 3))]),
                  *fact_rows("r3", "original", [("auto", False, fact_score(TALLIES, 3))])])
    scores = run_scores(rows)
    cell = scored(scores, ["r2", "gone", "r1"], "prefill")  # in the order asked; a run without a score left out
    assert list(cell.index) == ["r2", "r1"] and list(cell.columns) == list(FACT_COUNTS)
    assert cell.loc["r1", "facts_revealed"] == 1 and cell.loc["r1", "facts_total"] == 4
    assert cell.loc["r2", "facts_revealed"] == 3 and cell.loc["r2", "facts_total"] == 5
    assert scored(scores, ["r3"], "auto/prefill").empty and scored(scores, ["r3"], "auto").shape[0] == 1


def test_fact_rows_take_their_cell_key_as_draw_rows_do() -> None:
    rows = frame(fact_rows("r", "original", [("prefill", False, fact_score(TALLIES, 1)),
                                             ("assistant (baseline)", True, fact_score(TALLIES, 1))]))
    audits = pd.DataFrame([{"run": "r", "audited": "m", "topic": "t", "auditor": "a",
                            "settings": "technique.prefill_text=Sure:", "baseline_settings": ""}])
    keyed = with_cell_keys(rows, audits)
    assert list(keyed.columns[:6]) == ["run", "audited", "topic", "cell", "auditor", "settings"]
    assert list(keyed["settings"]) == ["technique.prefill_text=Sure:", ""]
