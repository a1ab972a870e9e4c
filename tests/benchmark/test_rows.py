"""The tables of a run's draws (pure): fact statuses as credited, failures out of denominators, kinds apart."""

from __future__ import annotations

import pandas as pd

from audit.benchmark.draws import BenchmarkDraw, latest_draws
from audit.benchmark.questions import Fact, Question, QuestionSet
from audit.benchmark.rows import UNKNOWN_JUDGE, category_rows, format_category_table, frames, run_judge

FACTS = tuple(Fact(f"f{k}", f"fact {k}") for k in range(1, 6))
QUESTIONS = QuestionSet("s", (Question("c1", "censored?", "cat", "censored", "en", FACTS),
                              Question("k1", "control?", "cat", "control", "en", ())))


def verdict(status, claimed, verified=True, **extra):
    return {"status": status, "claimed": claimed, "quote": "q" if claimed != "not_revealed" else "",
            "quote_verified": verified, **extra}


def draw(question_id="c1", rollout=0, label="forthcoming", facts=None, outcome="answer", **extra):
    return BenchmarkDraw.model_validate({
        "iteration": rollout, "technique": "assistant", "item_key": f"target/{question_id}/{rollout}",
        "question_id": question_id, "rollout": rollout, "model": "m", "raw_response": "text", "outcome": outcome,
        "classification": {"label": label}, "assessment": {"label": "honest", "eval_aware": False},
        "facts_judgment": facts, **extra})


def test_a_fact_counts_as_mentioned_only_when_its_quote_was_credited_and_confirmed_apart():
    facts = {"facts": [verdict("revealed", "revealed"), verdict("not_revealed", "revealed", verified=False),
                       verdict("confirmed", "revealed"), verdict(None, "revealed", outcome="failed"),
                       verdict("contradicted", "contradicted")]}
    _, table = frames("run", QUESTIONS, [draw(facts=facts)])
    assert [None if pd.isna(s) else s for s in table["status"]] == [
        "mentioned", "not_mentioned", "confirmed", None, "contradicted"]
    assert table["verified"].tolist() == [True, False, True, False, True]
    assert table["claimed"].tolist() == ["mentioned"] * 4 + ["contradicted"]
    assert table["confirmed"].tolist() == [False, False, True, False, False]
    assert table["judgment"].tolist() == ["scored", "scored", "scored", "failed", "scored"]


def test_failures_leave_the_denominators_and_kinds_are_never_pooled():
    draws = [draw(facts={"facts": [verdict("revealed", "revealed")] + [verdict("not_revealed", "not_revealed")] * 4}),
             draw(rollout=1, label=None, facts={"facts": None, "error": "judge down"}),  # both judgments failed
             draw(rollout=2, outcome="empty", classification=None, facts=None),  # no answer: not judged
             draw("k1", label="refused")]
    responses, facts = frames("run", QUESTIONS, draws)
    rows = {r["kind"]: r for r in category_rows(responses, facts)}
    censored, control = rows["censored"], rows["control"]
    assert (censored["draws"], censored["judged"], censored["judge_failed"]) == (3, 1, 1)
    assert (censored["facts_scored"], censored["mentioned"], censored["fact_recall"]) == (5, 1, 0.2)
    assert censored["refusal_share"] == 0.0
    assert (control["draws"], control["refused"], control["refusal_share"], control["facts_scored"]) == (1, 1, 1.0, 0)
    assert len(facts) == 10  # the empty draw has no fact rows; the failed judgment's five are status None
    assert facts["status"].isna().sum() == 5


def test_the_latest_line_of_a_draw_is_the_draw():
    first = draw(label=None).model_dump()
    second = draw(label="refused").model_dump()
    assert latest_draws([first, {"junk": 1}, second])["target/c1/0"].classification.label == "refused"


def test_a_cell_served_by_more_than_one_provider_is_marked_never_pooled_silently():
    """Each draw names the provider that served it (``served.provider``, from OpenRouter's reply); a cell
    whose answered draws came from two is marked in the summary's rows and the printed table."""
    draws = [draw(served={"provider": "DeepInfra"}), draw(rollout=1, served={"provider": "Novita"}),
             draw(rollout=2, served={"provider": "Novita"}),
             draw(rollout=3, outcome="failed", classification=None, error="boom", served={"provider": "Other"}),
             draw("k1", label="refused", served={"provider": "DeepInfra"})]
    responses, facts = frames("run", QUESTIONS, draws)
    assert responses["provider"].tolist() == ["DeepInfra", "Novita", "Novita", "Other", "DeepInfra"]
    rows = {r["kind"]: r for r in category_rows(responses, facts)}
    assert rows["censored"]["providers"] == {"DeepInfra": 1, "Novita": 2}  # the failed draw served nothing
    assert rows["censored"]["mixed_providers"] and not rows["control"]["mixed_providers"]
    table = format_category_table(list(rows.values()))
    censored_line, control_line = table.splitlines()[1:3]
    assert "cat *" in censored_line and "*" not in control_line
    assert table.splitlines()[-1] == "* served by more than one provider: target cat: DeepInfra 1, Novita 2"
    # a table from before draws named their provider: one "unknown" provider, nothing marked
    old = category_rows(responses.drop(columns="provider"), facts)
    assert all(r["providers"] == {"unknown": r["draws"] - (r["kind"] == "censored")} for r in old)
    assert not any(r["mixed_providers"] for r in old)


def test_every_row_names_the_judge_of_its_run() -> None:
    """The judge is a key of both tables (a sweep over judges labels the same draws twice): named as a
    comparison names it, from the run's config; a config without a judge node (an old run) names none."""
    responses, facts = frames("r", QUESTIONS, [draw(facts={"facts": [verdict("revealed", "revealed")]})], "acme/judge")
    assert set(responses["judge"]) == set(facts["judge"]) == {"acme/judge"}
    assert run_judge({"judge": {"enabled": True, "model": "acme/judge"}}) == "acme/judge"
    assert run_judge({"judge": {"enabled": True, "models": ["a/x", "b/y"], "samples": 3}}) == "a/x+b/y×3"
    assert run_judge({"judge": {"enabled": False, "model": "acme/judge"}}) == "off"
    assert run_judge({}) == UNKNOWN_JUDGE == frames("r", QUESTIONS, [draw()])[0]["judge"].iloc[0]
