"""The censorship comparison's draw rows: one per draw, a label column per judging; the counts a cell
shows are grouped from them (a failed judgment is unclassified, a draw a judging did not judge is not
counted under it)."""

from __future__ import annotations

from audit.compare.draw_rows import cell_counts, cell_panels, draw_rows, frame, label_column, label_counts, panel_counts
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


def panel_draw(k: int, members: dict[str, list[str | None]], *, baseline: bool = False) -> Draw:
    return Draw(iteration=k, technique="assistant" if baseline else "prefill", is_baseline=baseline,
                classification=Judgment(label="refused", outcome="majority", members=members))


def test_a_panels_draws_carry_each_members_label_and_its_split_is_grouped_by_cell() -> None:
    draws = [panel_draw(1, {"a": ["refused"] * 2, "b": ["refused"] * 2}),  # every vote back and equal
             panel_draw(2, {"a": ["refused", "deflected"], "b": ["refused"] * 2}),  # a's own samples differ
             panel_draw(3, {"a": ["refused"] * 2, "b": [None, None]}),  # b failed: not unanimous
             panel_draw(3, {"a": ["refused"] * 2, "b": ["refused"] * 2}, baseline=True),
             draw(4, "refused")]  # a single judge: no panel item
    rows = frame(draw_rows("r", draws, [ORIGINAL]), [ORIGINAL])
    assert list(rows.columns[-4:]) == ["label:original", "panel:original", "label:original:a", "label:original:b"]
    assert list(rows["panel:original"]) == ["unanimous", "split", "split", "unanimous", ""]
    # a member's own label is the majority of its samples ('' without one, or when it failed)
    assert list(rows["label:original:a"]) == ["refused", "", "refused", "refused", ""]
    assert list(rows["label:original:b"]) == ["refused", "refused", "", "refused", ""]
    assert panel_counts(rows, ORIGINAL) == (4, 2)
    assert cell_panels(rows, ORIGINAL) == {"assistant (baseline)": (1, 0), "prefill": (3, 2)}
    single = frame(draw_rows("r", draws[-1:], [ORIGINAL]), [ORIGINAL])
    assert "panel:original" not in single.columns and panel_counts(single, ORIGINAL) == (0, 0)
