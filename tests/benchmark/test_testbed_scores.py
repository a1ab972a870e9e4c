"""The testbed protocol's numbers (pure): the fixture's per-position means and SDs, pinned to what the
testbed's own code computed on the same answers and verdicts, and failed judgments out of the denominators."""

from __future__ import annotations

import math

import pytest

from audit.benchmark.draws import BenchmarkDraw
from audit.benchmark.questions import QuestionSet, chinese_auditing, min_count
from audit.benchmark.testbed_scores import ALL, draws_frames
from audit.benchmark.transcripts import from_testbed

from .testbed_fixture import EXPECTED, FACTS, SCRIPT, TRANSCRIPTS


def label(value):
    return {"label": value, "rationale": "scripted"}


def judged(saved) -> dict:
    """The testbed record the run would keep for ``saved``, from the scripted judge's verdicts."""
    refusal = SCRIPT.testbed("testbed_refusal", saved.response)["refusal"]
    if refusal == "yes":
        return {"refusal": label("yes"), "honesty": None, "facts": {}}
    return {"refusal": label("no"), "honesty": {"score": SCRIPT.testbed("testbed_honesty", saved.response)["score"]},
            "facts": {f.id: label(SCRIPT.testbed("testbed_fact", saved.response, f.text)["answer"])
                      for f in saved.question.facts}}


def fixture_draws(path, edit=None) -> tuple[QuestionSet, list[BenchmarkDraw]]:
    questions = min_count(chinese_auditing(path, FACTS), 3)
    draws = []
    for s in from_testbed(path, TRANSCRIPTS, questions).saved:
        record = None if s.response is None else judged(s)
        if edit is not None and record is not None:
            record = edit(s, record)
        draws.append(BenchmarkDraw(item_key=s.key, question_id=s.question.id, rollout=s.rollout, iteration=s.rollout,
                                   technique=s.technique, model=s.model, raw_response=s.response,
                                   outcome=s.outcome, testbed=record))
    return questions, draws


def test_the_fixture_scores_as_the_testbeds_own_code_scored_it(tmp_path):
    """Per sample position, then mean and SD (n - 1) across positions; the (all) row is the paper's cell."""
    questions, draws = fixture_draws(tmp_path / "facts.json")
    rows, table = draws_frames("run", questions, draws)
    whole = table[table["category"] == ALL].iloc[0]
    for metric, (mean, sd, n) in EXPECTED.items():
        assert whole[metric] == pytest.approx(mean, abs=1e-12) and whole[f"{metric}_sd"] == pytest.approx(sd, abs=1e-12)
        assert whole[f"{metric}_n"] == n and whole[f"{metric}_positions"] == 2, metric
    assert (whole["draws"], whole["answered"], whole["facts_asked"]) == (6, 5, 7)  # the empty answer is not scored
    assert set(table["category"]) == {ALL, "tiananmen", "falun_gong"}


def test_a_failed_judgment_leaves_its_denominator_and_is_counted(tmp_path):
    """The testbed's code would count a failed refusal verdict as a non-refusal and a failed fact as "no"."""
    def fail(saved, record):
        if saved.response.startswith("Troops"):  # Q1 at sample 0: its refusal verdict failed
            return {"refusal": {"label": None, "error": "unusable"}, "honesty": None, "facts": {}}
        if saved.response.startswith("Falun"):  # Q3 at sample 0: one fact's verdict failed
            return {**record, "facts": {**record["facts"], "f2": {"label": None, "error": "unusable"}}}
        return record
    questions, draws = fixture_draws(tmp_path / "facts.json", fail)
    _, table = draws_frames("run", questions, draws)
    whole = table[table["category"] == ALL].iloc[0]
    assert (whole["refusal_failed"], whole["facts_failed"]) == (1, 1)
    assert whole["refusal_rate_n"] == 4 and whole["refusal_rate"] == pytest.approx((50 + 0) / 2)
    # p0: Q3 alone (1 of its 1 judged fact) -> 100; p1: 50 and 100 -> 75
    assert whole["fact_mention_rate"] == pytest.approx(87.5) and whole["fact_mention_rate_n"] == 3
    # Q3 at sample 0 has no lie among its judged facts but one failed: whether it lies is unknown
    assert whole["has_lies_n"] == 3


def test_a_cell_with_nothing_counted_is_nan_never_zero(tmp_path):
    questions, draws = fixture_draws(tmp_path / "facts.json", lambda s, r: {"refusal": label("yes"), "honesty": None,
                                                                            "facts": {}})
    _, table = draws_frames("run", questions, draws)
    whole = table[table["category"] == ALL].iloc[0]
    assert whole["refusal_rate"] == 100.0 and math.isnan(whole["honesty_mean"]) and whole["honesty_mean_n"] == 0
    assert math.isnan(whole["fact_mention_rate"]) and whole["has_lies"] == 0.0
