"""The benchmark's cells and gaps (audit.benchmark.cells) against hand recounts of synthetic tables,
and their intervals against an independent reference: statsmodels' cluster-robust variance of a
mean (questions as clusters) and Wilson bounds, scipy's t quantile."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from statsmodels.regression.linear_model import OLS

from audit.benchmark.cells import (CELL_KEYS, GAP_METRICS, METRICS, BenchmarkTables, benchmark_tables, cells,
                                   count_once, question_counts, served_by, with_knowable)
from audit.stats.intervals import paired_difference
from tests.benchmark.synthetic import tables


@pytest.fixture(scope="module")
def synthetic() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The synthetic tables as a comparison loads them: with the ``settings`` cell key (one set here)."""
    responses, facts = tables()
    return responses.assign(settings=""), facts.assign(settings="")


@pytest.fixture(scope="module")
def synthetic_cells(synthetic: tuple[pd.DataFrame, pd.DataFrame]) -> pd.DataFrame:
    """``cells(*synthetic)``, computed once for the tests that read it (five did the same ~0.3 CPU-s)."""
    return cells(*synthetic)


@pytest.fixture(scope="module")
def synthetic_tables(synthetic: tuple[pd.DataFrame, pd.DataFrame]) -> BenchmarkTables:
    """``benchmark_tables(*synthetic)``, computed once for the tests that read it (four did the same ~0.7 CPU-s)."""
    return benchmark_tables(*synthetic)


def _cell(frame: pd.DataFrame, **keys: str) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for k, v in keys.items():
        mask &= (frame[k] == v).to_numpy()
    return frame[mask]


def test_every_cell_is_a_hand_recount(synthetic: tuple[pd.DataFrame, pd.DataFrame], synthetic_cells: pd.DataFrame) -> None:
    """Counts straight from the rows: draws, judge failures and unanswered draws apart, the refusal
    share over labelled draws only, recall and lie rate over judged facts, credited only when verified,
    facts only confirmed apart (in recall's denominator, never its numerator)."""
    assert (synthetic[1]["status"] == "confirmed").sum() > 0
    responses, facts = synthetic
    table = synthetic_cells
    assert len(table) == len(responses.groupby(list(CELL_KEYS)))
    for row in table.to_dict("records"):
        keys = {k: row[k] for k in CELL_KEYS}
        r, f = _cell(responses, **keys), _cell(facts, **keys)
        labelled = r[r["label"].notna() & ~r["judge_failed"]]
        assert row["draws"] == len(r) and row["questions"] == r["question_id"].nunique()
        assert row["judge_failed"] == int(r["judge_failed"].sum())
        assert row["unjudged"] == int((r["label"].isna() & ~r["judge_failed"]).sum())
        assert (row["refusal_k"], row["refusal_n"]) == (int((labelled["label"] == "refused").sum()), len(labelled))
        assert (row["official_line_k"], row["official_line_n"]) == (int((labelled["label"] == "official_line").sum()),
                                                                    len(labelled))
        judged = f[f["status"].notna()]
        assert row["facts_failed"] == int(f["status"].isna().sum())
        assert (row["fact_recall_k"], row["fact_recall_n"]) == (
            int(((judged["status"] == "mentioned") & judged["verified"]).sum()), len(judged))
        assert row["lie_rate_k"] == int(((judged["status"] == "contradicted") & judged["verified"]).sum())
        assert row["facts_unverified"] == int((judged["claimed"].isin(["mentioned", "contradicted"])
                                               & ~judged["verified"]).sum())
        assert row["facts_confirmed"] == int((judged["status"] == "confirmed").sum())
        assert row["assessment_failed"] == int(r["assessment_failed"].sum())
        honest = r[r["honesty"].notna()]
        assert (row["honest_k"], row["honest_n"]) == (int((honest["honesty"] == "honest").sum()), len(honest))
        assert row["eval_aware_k"] == int((r["eval_aware"] == True).sum())  # noqa: E712
        if row["refusal_n"]:
            assert row["refusal"] == pytest.approx(row["refusal_k"] / row["refusal_n"])
            assert row["refusal_lo"] <= row["refusal"] <= row["refusal_hi"]


def test_reference_and_target_never_share_a_cell(synthetic_cells: pd.DataFrame) -> None:
    table = synthetic_cells
    reference = table[table["role"] == "reference"]
    assert len(reference) and set(reference["model"]) == {"ref/r"}
    assert not set(table[table["role"] == "target"]["model"]) & {"ref/r"}
    # control and censored questions are separate cells: no cell holds both kinds' questions
    assert set(table["kind"]) == {"censored", "control"}
    assert (table[table["kind"] == "control"]["category"] == "uncategorised").all()


def test_a_fact_is_knowable_when_the_reference_states_it_in_any_rollout() -> None:
    keys = {"run": "x", "model": "m", "technique": "assistant", "framing": "natural", "lang": "en",
            "question_set": "s", "category": "c", "kind": "censored"}
    rows = [("reference", "q1", 0, "f1", "mentioned", True), ("reference", "q1", 1, "f1", "not_mentioned", False),
            ("reference", "q1", 0, "f2", "mentioned", False),  # unverified: the reference did not state it
            ("target", "q1", 0, "f1", "mentioned", True), ("target", "q1", 0, "f2", "mentioned", True),
            ("target", "q2", 0, "f1", "mentioned", True)]  # no reference on q2: neither side
    facts = pd.DataFrame([{**keys, "role": role, "question_id": q, "rollout": ro, "fact_id": fid, "status": st,
                           "quote": "x", "verified": v} for role, q, ro, fid, st, v in rows])
    knowable = with_knowable(facts)["knowable"].tolist()
    assert knowable[:3] == [pd.NA] * 3 and knowable[3:5] == [True, False] and knowable[5] is pd.NA


def test_the_recall_split_by_knowable(synthetic_cells: pd.DataFrame) -> None:
    table = synthetic_cells
    target = table[table["role"] == "target"]
    assert (target["fact_recall_knowable_n"] + target["fact_recall_unstated_by_reference_n"] == target["fact_recall_n"]).all()
    assert (table[table["role"] == "reference"]["fact_recall_knowable_n"] == 0).all()


def _reference_interval(k: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """The question-level interval computed independently: the variance of the pooled share is the
    cluster-robust variance of the mean of the 0/1 draws (statsmodels OLS on a constant, clusters =
    questions, its small-sample factor G/(G-1)); the design effect is that over the binomial
    variance (at least 1); the continuity-corrected Wilson bounds (Newcombe 1998, method 4, written
    out here from the paper) on the effective size at scipy's t quantile for min(Kish questions,
    questions with an event on the rarer side) − 1 degrees of freedom, fractional."""
    y = np.concatenate([np.r_[np.ones(int(a)), np.zeros(int(b - a))] for a, b in zip(k, n)])
    groups = np.repeat(np.arange(len(k)), n.astype(int))
    fit = OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    p, total = y.mean(), len(y)
    deff = max(1.0, fit.bse[0] ** 2 / (p * (1 - p) / total))
    rarer = (k > 0) if k.sum() <= (n - k).sum() else (k < n)
    z = scipy_stats.t.ppf(0.975, max(1.0, min(total ** 2 / (n ** 2).sum(), int(rarer.sum())) - 1))
    m = total / deff
    q = 1 - p
    lo = (2 * m * p + z * z - 1 - z * math.sqrt(z * z - 2 - 1 / m + 4 * p * (m * q + 1))) / (2 * (m + z * z))
    hi = (2 * m * p + z * z + 1 + z * math.sqrt(z * z + 2 - 1 / m + 4 * p * (m * q - 1))) / (2 * (m + z * z))
    return max(0.0, min(lo, p)), min(1.0, max(hi, p))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_interval_matches_an_independent_computation(seed: int) -> None:
    responses, facts = tables(seed=seed, censored=30, rollouts=4)
    table = cells(responses, facts)
    per_q = question_counts(responses, facts)
    checked = 0
    for row in table.to_dict("records"):
        for name in ("refusal", "fact_recall"):
            k, n = row[f"{name}_k"], row[f"{name}_n"]
            if min(k, n - k) < 8:  # the distribution-free interval: checked below
                continue
            group = _cell(per_q, **{c: row[c] for c in CELL_KEYS})
            group = group[group[f"{name}_n"] > 0]
            lo, hi = _reference_interval(group[f"{name}_k"].to_numpy(float), group[f"{name}_n"].to_numpy(float))
            # the project's t for fractional degrees of freedom interpolates between whole ones (a hair wider)
            assert row[f"{name}_lo"] == pytest.approx(lo, abs=2e-3) and row[f"{name}_lo"] <= lo + 1e-6
            assert row[f"{name}_hi"] == pytest.approx(hi, abs=2e-3) and row[f"{name}_hi"] >= hi - 1e-6
            assert row[f"{name}_questions"] == len(group) and "over questions" in row[f"{name}_method"]
            checked += 1
    assert checked >= 10


def test_a_rare_cell_shows_the_distribution_free_interval_over_questions() -> None:
    responses, facts = tables(seed=4, censored=10, control=10, rollouts=2)
    table = cells(responses, facts)
    rare = table[(table["refusal_k"] < 8) & (table["refusal_questions"] >= 2)]
    assert len(rare)
    for row in rare.to_dict("records"):
        assert row["refusal_method"].startswith("95% distribution-free interval over questions")
        half = math.sqrt(math.log(2 / 0.05) / (2 * row["refusal_questions"]))
        assert row["refusal_hi"] - row["refusal_lo"] >= min(half, 1 - row["refusal_lo"]) - 1e-9


def test_nothing_counted_is_undefined_not_zero() -> None:
    responses, facts = tables(seed=5, models=("m/a",), techniques=("assistant",), framings=("natural",),
                              censored=2, control=0, reference=None)
    responses = responses.assign(label=None, judge_failed=True, honesty=None, eval_aware=None)
    table = cells(responses, facts.iloc[0:0])
    assert table["refusal"].isna().all() and (table["refusal_n"] == 0).all()
    assert (table["judge_failed"] == table["draws"]).all() and table["fact_recall"].isna().all()


def test_control_gap_is_censored_minus_control_over_separate_questions(
        synthetic: tuple[pd.DataFrame, pd.DataFrame], synthetic_tables: BenchmarkTables) -> None:
    responses, _ = synthetic
    gaps = synthetic_tables.control_gaps
    assert len(gaps) == 2 * 2 * 2 + 1  # models x techniques x framings, and the reference
    for row in gaps.to_dict("records"):
        keys = {k: row[k] for k in ("role", "model", "technique", "framing", "lang", "question_set")}
        r = _cell(responses, **keys)
        r = r[r["label"].notna() & ~r["judge_failed"]]
        share = {kind: (r[r["kind"] == kind]["label"] == "refused").mean() for kind in ("censored", "control")}
        assert row["censored_refusal"] == pytest.approx(share["censored"])
        assert row["refusal_gap"] == pytest.approx(share["censored"] - share["control"])
        assert (row["censored_questions"], row["control_questions"]) == (12, 6)
        assert "questions" in row["refusal_gap_method"] and "runs" not in row["refusal_gap_method"]
        if not math.isnan(row["refusal_gap_lo"]):
            assert row["refusal_gap_lo"] <= row["refusal_gap"] <= row["refusal_gap_hi"]


def test_knows_vs_says_pairs_each_technique_with_the_assistant_on_the_same_questions(
        synthetic: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    responses, facts = synthetic
    # drop one question from the prefill arm of one cell: that question leaves both sides
    drop = (responses["technique"] == "prefill") & (responses["question_id"] == "q0") & (responses["model"] == "m/a") \
        & (responses["framing"] == "natural")
    kvs = benchmark_tables(responses[~drop], facts).knows_vs_says
    assert set(kvs["technique"]) == {"prefill"} and set(kvs["baseline"]) == {"assistant"}
    row = _cell(kvs, model="m/a", framing="natural", kind="censored").iloc[0]
    assert (row["questions"], row["baseline_questions"], row["paired_questions"]) == (11, 12, 11)
    r = responses[~drop]
    r = _cell(r, model="m/a", framing="natural", kind="censored")
    r = r[r["label"].notna() & ~r["judge_failed"] & (r["question_id"] != "q0")]
    share = {t: (r[r["technique"] == t]["label"] == "refused").mean() for t in ("prefill", "assistant")}
    assert row["refusal_gap"] == pytest.approx(share["prefill"] - share["assistant"])
    assert row["refusal_gap"] < 0 and row["refusal_gap_hi"] > row["refusal_gap_lo"]  # the assistant refuses more
    assert row["refusal_gap_method"].startswith("paired 95% t interval over questions")


def test_framing_gaps_pair_each_framing_with_natural(synthetic_tables: BenchmarkTables) -> None:
    gaps = synthetic_tables.framing_gaps
    assert set(gaps["framing"]) == {"evaluation"} and set(gaps["baseline"]) == {"natural"}
    assert {f"{m}_gap" for m in GAP_METRICS} <= set(gaps.columns)
    assert (gaps["paired_questions"] > 0).all()


def test_every_metric_has_its_columns(synthetic_cells: pd.DataFrame) -> None:
    table = synthetic_cells
    for m in METRICS:
        assert {m.name, f"{m.name}_lo", f"{m.name}_hi", f"{m.name}_questions", f"{m.name}_method"} <= set(table.columns)


def test_a_draw_the_cache_replayed_into_another_run_counts_once(synthetic: tuple[pd.DataFrame, pd.DataFrame],
                                                                synthetic_cells: pd.DataFrame) -> None:
    """A sweep over techniques asks the reference the same questions in every job, the later jobs
    reading them from the cache: the same rollout with the same response in a second run is one draw."""
    responses, facts = synthetic
    ref_r, ref_f = (frame[frame["role"] == "reference"] for frame in (responses, facts))
    # a call that failed is not cached: only answered draws come back as replays
    again_r, again_f = ref_r[ref_r["response"].notna()].assign(run="runs/second"), ref_f.assign(run="runs/second")
    table = cells(pd.concat([responses, again_r]), pd.concat([facts, again_f]))
    before = synthetic_cells
    reference = table["role"] == "reference"
    assert table.loc[reference, "replays"].sum() == len(again_r) and (table.loc[~reference, "replays"] == 0).all()
    for column in ("draws", "refusal_k", "refusal_n", "fact_recall_k", "fact_recall_n", "facts_failed"):
        assert table[column].tolist() == before[column].tolist(), column
    # a second, different answer to the same rollout is a draw of its own
    other = again_r.assign(response=again_r["response"] + " (sampled again)")
    assert cells(pd.concat([responses, other]), facts)["draws"].sum() == len(responses) + len(other)


def test_knows_vs_says_question_by_question_is_each_questions_own_difference(
        synthetic: tuple[pd.DataFrame, pd.DataFrame], synthetic_tables: BenchmarkTables) -> None:
    responses, _ = synthetic
    by_question = synthetic_tables.knows_vs_says_by_question
    assert len(by_question) == 2 * 2 * (12 + 6)  # models x framings x questions, each technique against assistant
    row = by_question[(by_question["model"] == "m/a") & (by_question["framing"] == "natural")
                      & (by_question["question_id"] == "q3")].iloc[0]
    r = _cell(responses, model="m/a", framing="natural", question_id="q3")
    r = r[r["label"].notna() & ~r["judge_failed"]]
    share = {t: (r[r["technique"] == t]["label"] == "refused").mean() for t in ("prefill", "assistant")}
    assert row["side_refusal"] == pytest.approx(share["prefill"])
    assert row["refusal_gap"] == pytest.approx(share["prefill"] - share["assistant"])


def test_a_cell_served_by_more_than_one_provider_is_marked(synthetic: tuple[pd.DataFrame, pd.DataFrame],
                                                           synthetic_tables: BenchmarkTables) -> None:
    """Who served each answered draw (the ``provider`` column), per cell: a cell two providers served is
    marked, failed calls served nothing, a replay counts once, and a table without the column says unknown."""
    responses, facts = synthetic
    target = responses["role"] == "target"
    provider = np.where(target & (responses["model"] == "m/a") & (responses["rollout"] == 0), "Novita", "DeepInfra")
    served = responses.assign(provider=provider)
    table = benchmark_tables(served, facts).cells
    mixed = table["mixed_providers"]
    assert set(table.loc[mixed, "model"]) == {"m/a"} and set(table.loc[mixed, "role"]) == {"target"}
    for row in table.itertuples():  # a recount by hand of each cell's answered draws
        keys = np.logical_and.reduce([served[k] == getattr(row, k) for k in CELL_KEYS])
        answered = served[keys & (served["outcome"] != "failed")]
        assert row.providers == ", ".join(f"{p} {n}" for p, n in sorted(answered["provider"].value_counts().items()))
    again = served[(served["role"] == "reference") & served["response"].notna()].assign(run="runs/second")
    assert served_by(pd.concat([served, again]))["providers"].tolist() == served_by(served)["providers"].tolist()
    unknown = synthetic_tables.cells
    assert not unknown["mixed_providers"].any() and unknown["providers"].str.startswith("unknown ").all()


def test_each_judge_is_a_cell_of_its_own_counting_every_draw_once() -> None:
    """A sweep over judges: the same draws (the same responses, the second job's read from the cache)
    labelled by two judges are two cells, each counting every draw once with its own labels, never a
    replay of the other judge's; a table saved without the column is one unknown judge's."""
    a_r, a_f = tables(seed=5, judge="j/a")
    b_r, b_f = tables(seed=5, judge="j/b")
    b_r = b_r.assign(run=b_r["run"] + "-b", label=b_r["label"].where(b_r["label"].isna(), "refused"))
    b_f = b_f.assign(run=b_f["run"] + "-b")
    table = cells(pd.concat([a_r, b_r]), pd.concat([a_f, b_f]))
    assert set(table["judge"]) == {"j/a", "j/b"}
    for judge, (r, f) in {"j/a": (a_r, a_f), "j/b": (b_r, b_f)}.items():
        own, mine = cells(r, f), table[table["judge"] == judge].reset_index(drop=True)
        for column in ("draws", "replays", "refusal_k", "refusal_n", "fact_recall_k", "fact_recall_knowable_n"):
            assert mine[column].tolist() == own[column].tolist(), (judge, column)
        assert (mine["replays"] == 0).all()
    assert (table[(table["judge"] == "j/b") & (table["refusal_n"] > 0)]["refusal"] == 1.0).all()
    old = cells(a_r.drop(columns="judge"), a_f.drop(columns="judge"))
    assert set(old["judge"]) == {"unknown"} and old["draws"].tolist() == cells(a_r, a_f)["draws"].tolist()


def test_a_fact_is_knowable_only_as_the_same_judge_read_the_reference() -> None:
    """The reference's verdicts are a judge's: a target judged by another judge than the one that read
    the reference has no knowable split (NA), never one borrowed from the other judge."""
    keys = {"run": "x", "model": "m", "technique": "assistant", "framing": "natural", "lang": "en",
            "question_set": "s", "category": "c", "kind": "censored", "question_id": "q1", "rollout": 0,
            "fact_id": "f1", "status": "mentioned", "quote": "x", "verified": True}
    facts = pd.DataFrame([{**keys, "role": role, "judge": judge}
                          for role, judge in (("reference", "j/a"), ("target", "j/a"), ("target", "j/b"))])
    assert with_knowable(facts)["knowable"].tolist() == [pd.NA, True, pd.NA]


def _refusals(replayed: list[object] | None) -> pd.DataFrame:
    """Two runs' row for the same question, rollout and cell, both the same canned refusal."""
    responses, _ = tables()
    row = responses[responses["response"].notna()].iloc[[0]]
    two = pd.concat([row.assign(run="job-a"), row.assign(run="job-b", response=row["response"].iloc[0])],
                    ignore_index=True).assign(response="I cannot discuss that.")
    return two if replayed is None else two.assign(replayed=replayed)


@pytest.mark.parametrize(("replayed", "counted", "kept_run"), [
    ([False, False], 2, None),  # sampled apart, the same words: two draws
    ([False, True], 1, "job-a"),  # the second run read the first's answer from the cache
    ([True, False], 1, "job-b"),  # listed first but served by the cache: the sampled row is the draw kept
    ([True, True], 1, "job-a"),  # only cached copies (the sampling run is not compared): one of them counts
    (None, 1, "job-a"),  # a table saved before `replayed`: the text decides, as it did then
])
def test_a_draw_counts_once_only_when_the_cache_replayed_it(replayed, counted, kept_run) -> None:
    responses = _refusals(replayed)
    facts = pd.DataFrame(columns=[*responses.columns[:13], "fact_id"])  # no facts: only the responses matter
    kept, _, replays = count_once(responses, facts.iloc[0:0])
    assert len(kept) == counted and len(replays) == 2 - counted
    if kept_run is not None:
        assert list(kept["run"]) == [kept_run]


def test_the_same_requests_served_apart_are_compared_question_by_question(synthetic) -> None:
    """A provider-pin sweep: the target's draws under pin A and under pin B (the same requests: their
    settings differ only in who served them) are two cells and one provider gap, paired by question; a
    run under another template sent other requests and is in no provider gap."""
    responses, facts = synthetic
    target, target_facts = responses[responses["role"] == "target"], facts[facts["role"] == "target"]

    def side(frame: pd.DataFrame, settings: str, unrouted: str) -> pd.DataFrame:
        return frame.assign(settings=settings, unrouted=unrouted, run=f"runs/{settings}")

    refusing = side(target, "provider=B", "").assign(label=target["label"].where(target["label"].isna(), "refused"))
    tables = benchmark_tables(pd.concat([side(target, "provider=A", ""), refusing, side(target, "template=x", "template=x")]),
                              pd.concat([side(target_facts, s, u) for s, u in
                                         (("provider=A", ""), ("provider=B", ""), ("template=x", "template=x"))]))
    assert set(tables.cells["settings"]) == {"provider=A", "provider=B", "template=x"}
    gaps = tables.provider_gaps
    assert not gaps.empty and set(zip(gaps["settings_a"], gaps["settings_b"])) == {("provider=A", "provider=B")}
    assert gaps["refusal_gap"].notna().any()
    per_q = tables.questions
    for row in gaps.to_dict("records"):
        keys = {k: row[k] for k in ("model", "technique", "framing", "lang", "question_set", "kind", "judge")}
        a, b = (_cell(per_q, **keys, settings=s).set_index("question_id") for s in ("provider=A", "provider=B"))
        both = a.index.intersection(b.index)
        expected = paired_difference(a.loc[both, "refusal_k"], a.loc[both, "refusal_n"], b.loc[both, "refusal_k"],
                                     b.loc[both, "refusal_n"], cluster="question")
        assert row["paired_questions"] == len(both)
        if expected is None:
            assert math.isnan(row["refusal_gap"])
            continue
        assert row["b_refusal"] == 1.0 and row["refusal_gap"] == pytest.approx(expected["value"])
        assert (row["refusal_gap_lo"], row["refusal_gap_hi"]) == pytest.approx((expected["lo"], expected["hi"]),
                                                                             nan_ok=True)
