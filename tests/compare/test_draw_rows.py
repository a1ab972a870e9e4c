"""The censorship comparison's draw rows: one per draw, a label column per judging; the counts a cell
shows are grouped from them (a failed judgment is unclassified, a draw a judging did not judge is not
counted under it)."""

from __future__ import annotations

from audit.compare.draw_rows import cell_counts, draw_rows, frame, label_column, label_counts
from audit.record.draws import ORIGINAL, Draw, Judgment


def draw(k: int, label: str | None, *, other: str | None = "refused", technique: str = "prefill",
         baseline: bool = False, auto: bool = False, judged: bool = True) -> Draw:
    return Draw(iteration=k, technique=technique, is_baseline=baseline, auto=auto, id=f"{k}.1" if auto else None,
                classification=Judgment(label=label) if judged else None,
                judgings={"other": Judgment(label=other)} if judged else {})


def test_a_label_column_per_judging_and_counts_grouped_by_cell() -> None:
    draws = [draw(1, "refused"), draw(1, "deflected", baseline=True, technique="assistant"), draw(2, None),
             draw(3, None, judged=False)]
    rows = frame(draw_rows("r", draws, [ORIGINAL, "other"]), [ORIGINAL, "other"])
    assert list(rows["draw"]) == ["1/response", "1/baseline", "2/response", "3/response"]
    assert list(rows[label_column("other")]) == ["refused", "refused", "refused", ""]
    own = rows[~rows["baseline"]]
    assert label_counts(own, ORIGINAL) == {"refused": 1, "unclassified": 1}  # draw 3 was not judged
    assert label_counts(own, "other") == {"refused": 2}
    assert cell_counts(rows, ORIGINAL) == {"assistant (baseline)": {"deflected": 1},
                                           "prefill": {"refused": 1, "unclassified": 1}}


def test_an_auto_runs_draws_are_counted_per_technique_and_no_rows_count_nothing() -> None:
    draws = [draw(1, "refused", auto=True, technique="assistant"), draw(2, "forthcoming", auto=True)]
    rows = frame(draw_rows("r", draws, [ORIGINAL]), [ORIGINAL])
    assert cell_counts(rows, ORIGINAL) == {"auto/assistant": {"refused": 1}, "auto/prefill": {"forthcoming": 1}}
    unjudged = Draw(iteration=3, technique="prefill", outcome="empty")  # no answer: never judged, shown as such
    (row,) = draw_rows("r", [unjudged], [ORIGINAL])
    assert (row["outcome"], row[label_column(ORIGINAL)]) == ("empty", "")
    assert draw_rows("r", draws[:1], [ORIGINAL])[0]["outcome"] == ""
    empty = frame([], [ORIGINAL])
    assert label_counts(empty, ORIGINAL) == {} and cell_counts(empty, ORIGINAL) == {}


def test_each_draw_gets_its_runs_cell_key_a_baseline_its_baseline_settings() -> None:
    import pandas as pd

    from audit.compare.draw_rows import with_cell_keys

    draws = [draw(1, "refused"), draw(1, "deflected", baseline=True, technique="assistant")]
    rows = frame(draw_rows("r", draws, [ORIGINAL]) + draw_rows("gone", draws[:1], [ORIGINAL]), [ORIGINAL])
    audits = pd.DataFrame([{"run": "r", "audited": "m", "topic": "t", "auditor": "a",
                            "settings": "technique.prefill_text=Sure:", "baseline_settings": ""}])
    keyed = with_cell_keys(rows, audits)  # a run the audits table does not hold (unusable) has no cell
    assert list(keyed.columns[:7]) == ["run", "audited", "topic", "cell", "auditor", "settings", "draw"]
    assert [tuple(r) for r in keyed[["cell", "settings"]].itertuples(index=False)] == [
        ("prefill", "technique.prefill_text=Sure:"), ("assistant (baseline)", "")]
