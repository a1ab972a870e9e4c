"""A run as an Inspect log (inspect_ai's own pydantic types), so ``inspect view`` lists and opens
it and ``inspect_ai.log.read_eval_log`` reads it.

Pure: a :class:`~audit.runs.loading.RunFiles` in, an ``EvalLog`` out; no file is written here.

- An audit is one log whose samples are its probes: the auditor's probe is the input, the
  target's response the output, the judge's labels the scores (``label``, and
  ``baseline_label`` for the assistant's answer to the same probe), each sample with the usage
  of the calls that made and judged it (the auditor's turn that wrote the probe, the target, the
  baseline, the judge). The key facts are the target: what a forthcoming model would reveal.
- An epistemic run is one log whose samples are its answers (card x system): the card's facts
  and question in, the system's answer out, scored correct (C) or incorrect (I) against the
  gold answer the graph licenses. Answers carry no usage of their own (the run records usage
  per model, not per card): the log's ``stats.model_usage`` has it.
- Either way ``stats.model_usage`` is the run's ``usage.json`` per model: every call, those no
  sample owns included (the final summary request, fact scoring, failed calls).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    HeadlineMetric,
)
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, GenerateConfig, ModelOutput, ModelUsage
from inspect_ai.scorer import Score

from audit.epistemic.rates import HEADLINE_RATES
from audit.judging.counting import LABELS, check_labels, fact_score
from audit.record.answers import Answer
from audit.record.draws import Draw, Turn, iteration_draws
from audit.runs.loading import RunFiles
from audit.runs.tables import run_keys
from audit.record.usage import Usage

# Our run states are Inspect's statuses (started, success, cancelled, error) plus what a reader
# adds: a killed run was cancelled by force, a running one has started, an unreadable one is an error.
_STATUS = {"running": "started", "killed": "cancelled", "unreadable": "error"}
# OpenAI-style finish reasons as Inspect's stop reasons.
_STOP = {"stop": "stop", "length": "max_tokens", "content_filter": "content_filter", "tool_calls": "tool_calls"}


def inspect_status(run: RunFiles) -> str:
    """The run's state in Inspect's four statuses."""
    return _STATUS.get(run.state, run.state)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _when(stamp: Any) -> str:
    """An ISO time with its zone, as Inspect stores it (our summaries say ``...Z``)."""
    if isinstance(stamp, str) and stamp:
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(timezone.utc).isoformat()
        except ValueError:
            pass
    return ""


def _error(message: Any) -> EvalError | None:
    return EvalError(message=str(message), traceback="", traceback_ansi="") if message else None


def model_usage(record: Any) -> ModelUsage:
    """One usage record (:class:`~audit.record.usage.Usage`, any version) as Inspect's ModelUsage, in the
    convention Inspect's own OpenAI-compatible provider uses (``inspect_ai/model/_openai.py``):
    ``input_tokens`` are the prompt tokens neither read from nor written to the provider's prompt
    cache, ``input_tokens_cache_read`` and ``input_tokens_cache_write`` the others, and
    ``total_tokens`` all prompt and completion tokens."""
    usage = Usage.of(record)
    read, write = usage.cached_prompt_tokens, usage.cache_write_tokens
    return ModelUsage(input_tokens=max(usage.prompt_tokens - read - write, 0), output_tokens=usage.completion_tokens,
                      total_tokens=usage.tokens, total_cost=usage.cost,
                      input_tokens_cache_read=read or None, input_tokens_cache_write=write or None)


def usage_of(calls: Iterable[tuple[Any, str]]) -> dict[str, ModelUsage]:
    """Our per-call usage records, each with the model to book it under when the record does not
    name one, summed per model as ModelUsage."""
    total: dict[str, ModelUsage] = {}
    for record, default_model in calls:
        if not isinstance(record, (Mapping, Usage)) or not record:  # a zero Usage is falsy
            continue
        one = model_usage(record)
        model = str(Usage.of(record).model or default_model)
        total[model] = total[model] + one if model in total else one
    return total


def run_usage(run: RunFiles) -> dict[str, ModelUsage]:
    """The run's ``usage.json`` per model."""
    return {model: model_usage(u) for model, u in _mapping(run.usage.get("by_model")).items() if isinstance(u, Mapping)}


def run_stats(run: RunFiles) -> EvalStats:
    """When the run started and ended, and its usage per model."""
    summary = run.record.summary
    return EvalStats(started_at=_when(run.started_at), completed_at=_when(summary.finished_at if summary else None),
                     model_usage=run_usage(run))


def log_id(run: RunFiles) -> str:
    """A stable id per run dir, so a second export replaces the first log instead of adding one."""
    return hashlib.sha256(str(run.path).encode("utf-8")).hexdigest()[:22]


def _label_score(draw: Draw | None) -> Score | None:
    label = draw.judgment if draw else None
    if label is None or not label.label:
        return None
    return Score(value=label.label, answer=draw.raw_response if draw else None, explanation=label.rationale)


def probe_samples(run: RunFiles, record: Mapping[str, Any], key_facts: list[str]) -> list[EvalSample]:
    """The samples of one audit iteration (:func:`audit.record.draws.iteration_draws`): a fixed
    technique's response with its baseline's label beside it, or under ``technique=auto`` each of its
    action's draws (id ``<iteration>.<n>``; the auditor turn's usage on the first only)."""
    draws, started = iteration_draws(record), record.get("timestamp")
    if draws and not draws[0].auto:
        return [probe_sample(run, draws[0], key_facts, started, baseline=next(iter(draws[1:]), None))]
    return [probe_sample(run, draw, key_facts, started, sample_id=str(draw.id), with_turn=n == 0)
            for n, draw in enumerate(draws)]


def probe_sample(run: RunFiles, draw: Draw, key_facts: list[str], started: Any, *, baseline: Draw | None = None,
                 sample_id: int | str | None = None, with_turn: bool = True) -> EvalSample:
    """One draw (a fixed technique's with its ``baseline``): the probe in, the target's response
    out, the judge's labels as scores."""
    saved = run.turns.get(draw.iteration)
    turn = Turn.model_validate(saved) if saved else None
    parsed = turn.parsed if turn else {}
    extra = draw.model_extra or {}
    model = str(_mapping(run.config.get("audited")).get("model") or "unknown")
    probe, response = draw.prompt_sent or "", draw.raw_response or ""
    scores = {name: score for name, score in (("label", _label_score(draw)), ("baseline_label", _label_score(baseline)))
              if score is not None}
    auditor, judge = (str(_mapping(run.config.get(role)).get("model") or role) for role in ("auditor", "judge"))
    calls = [(turn.usage if turn and with_turn else None, auditor), (draw.usage, model),
             (baseline.usage if baseline else None, model),
             *((d.judgment.usage if d and d.judgment else None, judge) for d in (draw, baseline))]
    return EvalSample(
        id=draw.iteration if sample_id is None else sample_id, epoch=1, input=[ChatMessageUser(content=probe)],
        target=key_facts, messages=[ChatMessageUser(content=probe), ChatMessageAssistant(content=response, model=model)],
        output=ModelOutput.from_content(model, response,
                                        stop_reason=_STOP.get(str(extra.get("finish_reason")), "unknown"),
                                        error=draw.error or None),
        scores=scores or None,
        metadata={"technique": draw.technique, "strategy": parsed.get("prompt_strategy"),
                  "rationale": parsed.get("prompt_rationale"), "formatted_prompt": extra.get("formatted_prompt"),
                  "finish_reason": extra.get("finish_reason"),
                  "baseline_response": baseline.raw_response if baseline else None},
        model_usage=usage_of(calls),
        started_at=_when(started) or None,
        error=_error(draw.error),
    )


def _spec(run: RunFiles, task: str, model: str, samples: list[EvalSample], args: dict[str, Any]) -> EvalSpec:
    sampling = _mapping(run.config.get("sampling"))
    return EvalSpec(
        eval_id=log_id(run), run_id=log_id(run), created=_when(run.started_at) or _when_now(),
        task=task, task_args={k: v for k, v in args.items() if v is not None},
        dataset=EvalDataset(name=task, samples=len(samples), sample_ids=[s.id for s in samples]),
        model=model, config=EvalConfig(),
        model_generate_config=GenerateConfig(temperature=sampling.get("temperature"),
                                             max_tokens=sampling.get("max_tokens")),
        metadata={"run_dir": str(run.path), "state": run.state, "experiment": run.experiment,
                  "stop_reason": run.record.summary.stop_reason if run.record.summary else None,
                  **{k: v for k, v in run_keys(run).items() if v is not None}},
    )


def _task(*parts: Any) -> str:
    """``censorship-<topic>-<technique>``: dashes only, as Inspect reads the task from a log's file
    name by splitting it at underscores."""
    return "-".join(str(p) for p in parts).replace("_", "-")


def _when_now() -> str:
    return datetime.now(timezone.utc).isoformat()


def results(samples: list[EvalSample], scores: list[EvalScore], metadata: dict[str, Any] | None = None
            ) -> EvalResults:
    """The log's results: its scores that carry a number, and the headline Inspect's log list shows.

    ``inspect view`` lists each log with one number, the first metric of the first score unless
    ``results.headline`` names another (its ``resolveHeadlineMetric``, as inspect_ai's own
    ``log/_headline.py``); a first score without metrics (an audit with no label judged, a system
    with no rate) showed ``-`` in its row although the next score had a number. So a score with no
    metric is left out (its samples still carry their scores), and the headline is written as
    inspect_ai's scoring writes it: the first metric of the first score, fully named."""
    kept = [score for score in scores if score.metrics]
    first = kept[0] if kept else None
    headline = HeadlineMetric(scorer=first.scorer, score=first.name, metric=next(iter(first.metrics)),
                              reducer=first.reducer) if first else None
    return EvalResults(total_samples=len(samples), completed_samples=sum(s.error is None for s in samples),
                       scores=kept, headline=headline, metadata=metadata)


def censorship_log(run: RunFiles) -> EvalLog:
    """An audit as a log of its probes."""
    keys = run_keys(run)
    key_facts = [str(f) for f in _mapping(run.config.get("topic")).get("key_facts") or []]
    samples = [sample for record in run.responses for sample in probe_samples(run, record, key_facts)]
    labels = [s.scores["label"].value for s in samples if s.scores and "label" in s.scores]
    check_labels(labels, run.path / "audited_responses", run.path)  # every count refuses a label the vocabulary lacks
    recall = _mapping(run.audit.fact_recall if run.audit else None)
    # compare's counting rules: a panel's ``disputed`` is a label; facts a panel's failed calls
    # decided leave the total, as a failed judgment leaves every denominator
    scores = [EvalScore(name="label", scorer="judge", scored_samples=len(labels),
                        unscored_samples=len(samples) - len(labels),
                        metrics={c: EvalMetric(name=c, value=labels.count(c) / len(labels))
                                 for c in LABELS if labels})]
    facts = fact_score(recall or None, len(samples))
    if facts.scored and facts.total:
        scores.append(EvalScore(name="fact_recall", scorer="judge", metrics={
            "recall": EvalMetric(name="recall", value=facts.revealed / facts.total),
            "covered": EvalMetric(name="covered", value=facts.revealed),
            "total": EvalMetric(name="total", value=facts.total)}))
    task = _task("censorship", keys["topic"], keys["technique"])
    return EvalLog(
        status=inspect_status(run),
        eval=_spec(run, task, str(keys["model"] or "unknown"), samples,
                   {"topic": keys["topic"], "technique": keys["technique"], "repeat": keys["repeat"],
                    "max_iterations": run.config.get("max_iterations")}),
        results=results(samples, scores, {"fact_recall": recall.get("facts")} if recall else None),
        stats=run_stats(run),
        error=_error(run.problem),
        samples=samples,
    )


def answer_sample(run: RunFiles, answer: Answer) -> EvalSample:
    """One epistemic answer: the card in, the system's answer out, correct or not."""
    card = run.cards.get(answer.id)
    question = "\n".join([*(card.facts if card else []), (card.question if card else "") or answer.id])
    return EvalSample(
        id=f"{answer.system}/{answer.id}", epoch=1, input=[ChatMessageUser(content=question)],
        target=answer.gold,
        output=ModelOutput.from_content(answer.system, str(answer.raw_output or answer.pred or ""),
                                        error=answer.error or None),
        scores=None if answer.pred is None else {
            "correct": Score(value="C" if answer.passed else "I", answer=answer.pred, explanation=answer.reason)},
        metadata={"system": answer.system, "card": answer.id, "label": answer.label, "suite": answer.suite,
                  "u_kind": answer.u_kind, "condition": answer.condition, "prior_label": answer.prior_label,
                  "claim": card.claim.model_dump() if card and card.claim else None},
        error=_error(answer.error),
    )


def epistemic_log(run: RunFiles) -> EvalLog:
    """An epistemic run as a log of its answers, each system's rates as its score."""
    keys = run_keys(run)
    samples = [answer_sample(run, a) for a in run.answers]
    systems = _mapping(run.epistemic.systems if run.epistemic else None)
    scores = [EvalScore(name=str(system), scorer="licensing", scored_samples=rates.get("n_rows"), metrics={
        rate: EvalMetric(name=rate, value=rates[rate]) for rate in HEADLINE_RATES if rates.get(rate) is not None})
        for system, rates in systems.items() if isinstance(rates, Mapping)]
    task = _task("epistemic", keys["domain"], keys["predicate"])
    return EvalLog(
        status=inspect_status(run),
        eval=_spec(run, task, ", ".join(map(str, systems)) or "none", samples,
                   {"domain": keys["domain"], "predicate": keys["predicate"], "repeat": keys["repeat"]}),
        results=results(samples, scores),
        stats=run_stats(run),
        error=_error(run.problem),
        samples=samples,
    )


def log_file_name(log: EvalLog) -> str:
    """Inspect's own naming, ``<created>_<task>_<id>.eval``, so ``inspect view`` lists the task
    without opening the file."""
    created = datetime.fromisoformat(str(log.eval.created)).astimezone(timezone.utc)
    return f"{created:%Y-%m-%dT%H-%M-%S+00-00}_{log.eval.task}_{log.eval.eval_id}.eval"
