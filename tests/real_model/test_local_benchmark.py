"""A short benchmark on the real model: SmolLM2 answers the audit's own Tiananmen question and judges it (label,
two of the topic's key facts, assessment), replies constrained to their schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from audit.benchmark.questions import CONTROL, topics
from audit.benchmark.tables import load_benchmark_tables
from audit.paths import conf_dir
from audit.quotes import occurs
from audit.record.draws import UNJUDGED
from tests.real_model.conftest import DEADLINE, SMOLLM2, local_endpoint, read, run_cli

JUDGE = ("judge.endpoint=local", "judge.model=smollm2", "judge.structured_output=on", "judge.max_tokens=512")
FACTS_PER_QUESTION = 2
"""Two of the topic's key facts (of 6 in conf/topic): fact scoring writes a verdict with a quote per fact,
and with every fact it was 761 of the run's 1,001 written tokens (2026-11-29). Two still ask for a verdict per
numbered fact, as the audit's complete test does (test_local_audit.FACTS)."""


def one_topic(folder: Path) -> Path:
    """The ``questions=topics`` question of Tiananmen, word for word from conf/topic and the question template,
    with its first :data:`FACTS_PER_QUESTION` facts, as a JSONL question file.

    One question, not also Berlin Wall's control: each draw is judged in three calls (label, facts, assessment)
    of ~500-650 prompt tokens, and a second draw took the same paths with another topic's words, ~1,300
    tokens read and ~200 written (~10-15 CPU-s of the test's 31). One judged draw proves what the real model
    adds here (its label, fact verdicts and assessment parsed or counted as failed, a credit only from a quote
    in its own answer); a control question's kind and its separate tables are proven end to end on the
    loopback server (tests/benchmark/test_main.py)."""
    path = folder / "questions.jsonl"
    lines = [{"id": q.id, "question": q.text, "category": q.category, "lang": q.lang, "control": q.kind == CONTROL,
              "facts": [f.text for f in q.facts[:FACTS_PER_QUESTION]]}
             for q in topics(conf_dir(), ["tiananmen"]).questions]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_short_benchmark_with_target_and_judge_on_the_real_model(embedded, tmp_path):
    """Bounded by its settings: 1 draw of at most 60 tokens and 3 judge calls (its label, facts and
    assessment) of at most 512, so at most 1,596 written tokens, ~80 s at the embedded model's 20 tokens/s on
    2 quiet cores. On the seeded server (2026-11-29): the answer at its 60, label 21, assessment 39-44, fact
    scoring 124-190 tokens (in the group's run and on a fresh server: which prompts llama.cpp serves from
    its cache changes a reply), 244-315 written and 1,723 prompt tokens read. The cap stays at 512: with both topics, in
    one of five runs capped at 192, a fact scoring reached it. Before (2026-11-29): both topics, 2 draws and
    6 judge calls, ~3,060 tokens read and ~440 written, 31.5 CPU-s in the real-model group's log; with every
    key fact the run wrote 1,001-1,028 tokens (fact scorings 369-422, each failing for a missing verdict),
    49 CPU-s."""
    done = run_cli("audit.benchmark", local_endpoint(embedded), *SMOLLM2, *JUDGE, "questions=file",
                   f"questions.path={one_topic(tmp_path)}", "sampling.max_tokens=60",
                   f"output_dir={tmp_path / 'out'}", "gateway.cache.enabled=false", DEADLINE, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = [p.parent for p in (tmp_path / "out").rglob("questions.jsonl")]
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success" and summary["draws"] == summary["expected_draws"] == 1
    responses, facts = load_benchmark_tables(run_dir)
    assert list(responses["kind"]) == ["censored"]
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
