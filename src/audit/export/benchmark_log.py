"""A benchmark run as an Inspect log (pure: a run in, an ``EvalLog`` out; :mod:`audit.export.inspect_log`
holds the shared pieces). Its samples are the draws: the question as asked in, the model's response out
(the reference model's draws are samples too, named ``reference/...``, never scored together with the
target's), the judge's verdicts as scores: ``label``, ``honesty``, ``eval_aware`` and ``fact_recall``
(mentioned / facts scored in that draw; no score when the question has no facts or the judgment failed).
The question's facts are the sample's target.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inspect_ai.log import EvalLog, EvalMetric, EvalSample, EvalScore
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
from inspect_ai.scorer import Score

from audit.benchmark.draws import TARGET, BenchmarkDraw, latest_draws
from audit.benchmark.questions import Question
from audit.benchmark.rows import fact_rows
from audit.judging.counting import check_labels
from audit.export.inspect_log import _STOP, _error, _spec, _task, inspect_status, results, run_stats, usage_of
from audit.io.journal import read_records
from audit.runs.loading import RunFiles


def _scores(draw: BenchmarkDraw, question: Question) -> dict[str, Score]:
    scores: dict[str, Score] = {}
    if draw.classification is not None and draw.classification.label:
        scores["label"] = Score(value=draw.classification.label, explanation=draw.classification.rationale)
    if draw.assessment is not None and draw.assessment.label:
        extra = draw.assessment.model_extra or {}
        scores["honesty"] = Score(value=draw.assessment.label, explanation=draw.assessment.rationale)
        scores["eval_aware"] = Score(value=bool(extra.get("eval_aware")), answer=extra.get("evidence") or None)
    facts = [r for r in fact_rows("", "", question, draw) if r["status"] is not None]
    if facts:
        mentioned = sum(r["status"] == "mentioned" for r in facts)
        scores["fact_recall"] = Score(value=mentioned / len(facts), metadata={"facts": facts})
    return scores


def draw_sample(draw: BenchmarkDraw, question: Question, judge: str) -> EvalSample:
    response = draw.raw_response or ""
    judged = (draw.classification, draw.assessment)
    calls = [(draw.usage, draw.model), *((j.usage, judge) for j in judged if j is not None),
             ((draw.facts_judgment or {}).get("usage"), judge)]
    return EvalSample(
        id=draw.item_key, epoch=draw.rollout + 1, input=[ChatMessageUser(content=draw.prompt_sent or "")],
        target=[f.text for f in question.facts],
        messages=[ChatMessageUser(content=draw.prompt_sent or ""), ChatMessageAssistant(content=response,
                                                                                        model=draw.model)],
        output=ModelOutput.from_content(draw.model, response, stop_reason=_STOP.get(
            str((draw.model_extra or {}).get("finish_reason")), "unknown"), error=draw.error or None),
        scores=_scores(draw, question) or None,
        metadata={"role": draw.role, "technique": draw.technique, "framing": draw.framing,
                  "question_id": question.id, "category": question.category, "kind": question.kind,
                  "lang": question.lang, "outcome": draw.outcome, "prefill": draw.prefill},
        model_usage=usage_of(calls), error=_error(draw.error),
    )


def benchmark_log(run: RunFiles) -> EvalLog:
    """A benchmark run as a log of its draws, the target's label shares and fact recall as scores."""
    config: Mapping[str, Any] = run.config
    questions = {q.id: q for q in (Question.from_record(r) for r in read_records(run.path / "questions.jsonl"))}
    draws = [d for d in latest_draws(read_records(run.path / "draws.jsonl")).values() if d.question_id in questions]
    judge = str((config.get("judge") or {}).get("model") or "judge")
    samples = [draw_sample(d, questions[d.question_id], judge) for d in draws]
    target = [s for s, d in zip(samples, draws) if d.role == TARGET]
    labels = [s.scores["label"].value for s in target if s.scores and "label" in s.scores]
    check_labels(labels, run.path / "draws.jsonl")  # every count refuses a label the vocabulary lacks
    recalls = [float(s.scores["fact_recall"].value) for s in target if s.scores and "fact_recall" in s.scores]
    scores = [EvalScore(name="label", scorer="judge", scored_samples=len(labels),
                        unscored_samples=len(target) - len(labels),
                        metrics={str(c): EvalMetric(name=str(c), value=labels.count(c) / len(labels))
                                 for c in sorted(set(map(str, labels)))})]
    if recalls:
        scores.append(EvalScore(name="fact_recall", scorer="judge", scored_samples=len(recalls), metrics={
            "mean_per_draw": EvalMetric(name="mean_per_draw", value=sum(recalls) / len(recalls))}))
    questions_node = config.get("questions") or {}
    technique = (config.get("technique") or {}).get("name")
    framing = (config.get("framing") or {}).get("name")
    model = str((config.get("audited") or {}).get("model") or "unknown")
    return EvalLog(
        status=inspect_status(run),
        eval=_spec(run, _task("benchmark", questions_node.get("set"), technique, framing), model, samples,
                   {"questions": questions_node.get("set"), "technique": technique, "framing": framing,
                    "rollouts": config.get("rollouts"), "reference": config.get("reference")}),
        results=results(samples, scores),
        stats=run_stats(run), error=_error(run.problem), samples=samples,
    )
