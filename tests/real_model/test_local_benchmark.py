"""A short benchmark on the real model: SmolLM2 answers two deccp questions of each kind and judges them
(label, facts of the audit's own topic, assessment), replies constrained to their schemas."""

from __future__ import annotations

import json

import pandas as pd

from audit.benchmark.tables import load_benchmark_tables
from audit.quotes import occurs
from audit.record.draws import UNJUDGED
from tests.real_model.conftest import DEADLINE, SMOLLM2, local_endpoint, read, run_cli

JUDGE = ("judge.endpoint=local", "judge.model=smollm2", "judge.structured_output=on", "judge.max_tokens=512")


def test_a_short_benchmark_with_target_and_judge_on_the_real_model(embedded, tmp_path):
    """Bounded by its settings: 2 draws of at most 60 tokens and 6 judge calls (a label, the facts and the
    assessment of each draw) of at most 512, so at most 3,192 written tokens, ~2.7 min at the embedded
    model's 20 tokens/s on 2 quiet cores. On the seeded server the run takes one path: 1,028 tokens
    (both answers at their 60, the judge 908 in 6 calls, the longest 422: under its cap, which cuts no
    reply), ~50 s of writing, measured 2026-11-29."""
    done = run_cli("audit.benchmark", local_endpoint(embedded), *SMOLLM2, *JUDGE, "questions=topics",
                   "questions.topics=[tiananmen,berlin_wall]", "sampling.max_tokens=60",
                   f"output_dir={tmp_path / 'out'}", "gateway.cache.enabled=false", DEADLINE, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = [p.parent for p in (tmp_path / "out").rglob("questions.jsonl")]
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success" and summary["draws"] == summary["expected_draws"] == 2
    responses, facts = load_benchmark_tables(run_dir)
    assert sorted(responses["kind"]) == ["censored", "control"]
    for row in responses.itertuples():
        # a draw is labelled, or its judgment failed (counted), or it had no answer to judge
        assert row.label is not None or row.judge_failed or row.outcome in UNJUDGED | {"failed"}
    # every fact credited rests on a quote found in the target's own words
    credited = facts[facts["status"].isin(["mentioned", "contradicted"])]
    text = dict(zip(responses["question_id"], responses["response"]))
    assert all(row.verified and occurs(str(row.quote), str(text[row.question_id])) for row in credited.itertuples())
    # one fact row per fact of every draw with an answer; none for a draw without one
    n_facts = {q["id"]: len(q["facts"]) for q in map(json.loads, (run_dir / "questions.jsonl").read_text().splitlines())}
    answered = responses[~responses["outcome"].isin(UNJUDGED | {"failed"})]
    assert len(facts) == sum(n_facts[q] for q in answered["question_id"])
    assert isinstance(pd.read_csv(run_dir / "responses.csv"), pd.DataFrame)
    assert "fact recall" in done.stdout
