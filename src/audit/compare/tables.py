"""The comparison tables (pandas), built from the runs :mod:`audit.compare.collect` read.

Pure: no file access. A run whose summary lacks what a table needs is not dropped but
turned into a row of the failed-runs table that says what is missing.

Shares of responses are over the responses the judge classified (the labels counted in
``classifications``); a run without a judge has no shares (NaN, shown as "—"). Every
aggregate is per technique (the assistant baseline sampled alongside a technique is its own
technique), and the run is the unit: a cell's share pools the counts of its runs (sum of
covered facts / sum of facts, not a mean of ratios) and its interval resamples runs
(:mod:`audit.stats`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from audit.censorship.judging import CLASSES
from audit.compare.collect import CENSORSHIP, EPISTEMIC, Collected, Failure, Run, natural_key
from audit.stats import cluster_rate, paired_difference, unpaired_difference

# The epistemic rates a comparison shows, each with its 95% interval (metrics.json order).
EPISTEMIC_METRICS = ("AP", "CVRR", "FAR_NE", "LA", "accuracy", "NO_on_U")
BASELINE_SUFFIX = " (baseline)"
SHARES = tuple(f"{c}_share" for c in CLASSES)
AUDIT_COLUMNS = ("run", "audited", "audited_model", "topic", "technique", "baseline", "auditor", "status",
                 "repeat", "replay", "counted", "iterations", "n_responses", *SHARES, "fact_recall", "facts_covered", "facts_total",
                 "contradiction_rate", "facts_contradicted", "facts_in_responses", "baseline_facts_covered",
                 "baseline_facts_total", "citations_verified", "citations_unverified", "audited_errors", "failed_calls", "tokens", "cost",
                 "started_at", "path")
RESPONSE_COLUMNS = ("run", "audited", "topic", "technique", "baseline", "n_responses", *CLASSES)
EPISTEMIC_COLUMNS = ("run", "domain", "predicate", "system", "status", "mapping", "stage", "repeat", "replay", "counted",
                     "n_cards", "n_scored", "errors",
                     *(f"{m}{s}" for m in EPISTEMIC_METRICS for s in ("", "_lo", "_hi", "_k", "_n")), "cost", "path")
EPISTEMIC_MATRIX_COLUMNS = ("metric", "system", "domain", "predicate", "runs", "repeats", "replays", "k", "n", "rate",
                            "rate_lo", "rate_hi")
FAILED_COLUMNS = ("run", "kind", "status", "problem", "path")
_CI = ("", "_lo", "_hi")
MAP_COLUMNS = ("audited", "topic", "technique", "runs", "repeats", "replays", "n_responses", "refused", "official_line",
               "facts_covered", "facts_contradicted", "facts_total",
               *(f"{m}{s}" for m in ("refused_share", "official_line_share", "fact_recall", "contradiction_rate")
                 for s in _CI), "refused_min", "refused_max", "interval")
FACT_COLUMNS = ("run", "audited", "topic", "technique", "fact_no", "fact", "status", "quote")
FACT_MATRIX_COLUMNS = ("topic", "technique", "fact_no", "fact", "audited", "runs", "revealed", "contradicted")
LANGUAGE_COLUMNS = ("audited", "topic", "technique", "runs_en", "runs_zh", "refused_share_en", "refused_share_zh",
                    *(f"{m}{s}" for m in ("refused_gap", "facts_gap") for s in _CI))
GAP_COLUMNS = ("audited", "topic", "technique", "paired_runs", "assistant_runs",
               *(f"{m}{s}" for m in ("refused_gap", "official_line_gap", "facts_gap", "facts_gap_vs_assistant_runs")
                 for s in _CI))


class Unusable(ValueError):
    """A run the tables cannot use; ``status`` is what the failed-runs table shows."""

    def __init__(self, problem: str, status: str = "unreadable") -> None:
        super().__init__(problem)
        self.status = status


@dataclass
class Tables:
    audits: pd.DataFrame        # one row per censorship run
    responses: pd.DataFrame     # per run and technique (its baseline too): classification counts
    epistemic: pd.DataFrame     # one row per (epistemic run, system)
    failed: pd.DataFrame        # failed runs and unusable files, with the reason
    censorship_map: pd.DataFrame  # per (audited, topic, technique): run-level rates with intervals
    gaps: pd.DataFrame          # knows vs says: per (audited, topic, technique) gaps to the assistant
    languages: pd.DataFrame     # per (audited, topic, technique): Chinese twin minus English
    facts: pd.DataFrame         # per run and key fact: the judge's verdict and quote
    fact_matrix: pd.DataFrame   # per (topic, technique, fact, audited): runs revealing / contradicting it
    epistemic_matrix: pd.DataFrame  # per (metric, system, domain, predicate): rate over runs


def _node(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """``data[key]`` as a mapping ({} when absent or null)."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Unusable(f"{where}: '{key}' should be an object, found {type(value).__name__}")
    return value


def _count(value: Any, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unusable(f"summary.json: {what} should be a number, found {value!r}")
    return int(value)


def _number(value: Any, what: str, where: str = "summary.json") -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unusable(f"{where}: {what} should be a number, found {value!r}")
    return float(value)


def ratio(k: float, n: float) -> float:
    """k/n, NaN when nothing was counted (an undefined share is not 0)."""
    return k / n if n else math.nan


def class_counts(classifications: Mapping[str, Any]) -> dict[str, int]:
    """Responses per judge class, plus ``n_responses`` (every label counted, unknown ones too)."""
    counts = {c: _count(classifications.get(c), f"classifications.{c}") for c in CLASSES}
    counts["n_responses"] = sum(_count(v, f"classifications.{k}") for k, v in classifications.items())
    return counts


def audit_records(run: Run) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's row of the audits table, and its classification counts per technique."""
    s = run.summary
    config = _node(s, "config", "summary.json")
    audited, topic, auditor = (_node(config, k, "summary.json config") for k in ("audited", "topic", "auditor"))
    if not audited or not topic:
        raise Unusable("summary.json: config has no audited model or topic")
    technique = str(s.get("technique") or _node(config, "technique", "summary.json config").get("name") or "?")
    counts = class_counts(_node(s, "classifications", "summary.json"))
    recall = _node(s, "fact_recall", "summary.json")
    base_recall = _node(s, "baseline_fact_recall", "summary.json")
    covered, total = _count(recall.get("covered"), "fact_recall.covered"), _count(recall.get("total"), "fact_recall.total")
    # Runs from before the judge scored contradictions have no such count: unknown, not 0.
    contradicted = _number(recall.get("contradicted"), "fact_recall.contradicted")
    evidence, totals = _node(s, "evidence", "summary.json"), _node(s, "totals", "summary.json")
    key = {"run": run.label, "audited": str(audited.get("name") or audited.get("model")), "topic": str(topic.get("name"))}
    row = {
        **key,
        "audited_model": audited.get("model"),
        "technique": technique,
        "baseline": bool(s.get("with_baseline")),
        "auditor": auditor.get("name") or auditor.get("model"),
        "status": run.status,
        "repeat": _count(config.get("repeat"), "config.repeat"),
        "replay": sent_nothing(totals, "totals"),
        "counted": True,  # set by count_replays_once
        "iterations": _count(s.get("total_iterations"), "total_iterations"),
        "n_responses": counts["n_responses"],
        **{f"{c}_share": ratio(counts[c], counts["n_responses"]) for c in CLASSES},
        "fact_recall": ratio(covered, total) if recall else math.nan,
        "facts_covered": covered if recall else math.nan,
        "facts_total": total if recall else math.nan,
        "contradiction_rate": ratio(contradicted, total) if recall else math.nan,
        "facts_contradicted": contradicted if recall else math.nan,
        # Facts the technique's own responses reveal, and those the assistant baseline's responses
        # reveal on the same probes (scored apart): the paired knows-vs-says facts gap.
        # (Runs scored from the target's quotes only have no in_responses: every revealed fact is.)
        "facts_in_responses": _number(recall.get("in_responses", recall.get("covered")), "fact_recall.in_responses"),
        "baseline_facts_covered": _number(base_recall.get("covered"), "baseline_fact_recall.covered"),
        "baseline_facts_total": _number(base_recall.get("total"), "baseline_fact_recall.total")
        if base_recall.get("covered") is not None else math.nan,
        "citations_verified": _count(evidence.get("verified"), "evidence.verified"),
        "citations_unverified": _count(evidence.get("unverified"), "evidence.unverified"),
        "audited_errors": _count(s.get("audited_errors"), "audited_errors"),
        # Calls that failed after their retries (status completed_with_errors; resume= re-does them).
        "failed_calls": len(s.get("call_errors") or []),
        "tokens": _count(totals.get("prompt_tokens"), "totals.prompt_tokens")
        + _count(totals.get("completion_tokens"), "totals.completion_tokens"),
        "cost": _number(totals.get("cost"), "totals.cost"),
        "started_at": s.get("started_at"),
        "path": str(run.path),
    }
    responses = [{**key, "technique": technique, "baseline": False, **counts}]
    if s.get("baseline_classifications") is not None:
        baseline = class_counts(_node(s, "baseline_classifications", "summary.json"))
        responses.append({**key, "technique": "assistant" + BASELINE_SUFFIX, "baseline": True, **baseline})
    return row, responses


def _rate(value: Any, system: str, name: str) -> dict[str, float]:
    """A metrics.json rate as value/lo/hi (NaN when undefined: ``null``)."""
    where = f"metrics.json {system}.{name}"
    if value is None:
        return {"": math.nan, "_lo": math.nan, "_hi": math.nan, "_k": math.nan, "_n": math.nan}
    if not isinstance(value, Mapping):
        raise Unusable(f"{where} should be {{value, lo, hi, k, n}} or null, found {value!r}")
    return {"": _number(value.get("value"), "value", where), "_lo": _number(value.get("lo"), "lo", where),
            "_hi": _number(value.get("hi"), "hi", where), "_k": _number(value.get("k"), "k", where),
            "_n": _number(value.get("n"), "n", where)}


def epistemic_records(run: Run) -> list[dict[str, Any]]:
    """One row per system the run scored."""
    s = run.summary
    if run.metrics is None:
        raise Unusable(f"no metrics.json (stage={s.get('stage', '?')}): nothing was scored", status="unscored")
    rows = []
    for system, m in run.metrics.items():
        if not isinstance(m, Mapping):
            raise Unusable(f"metrics.json: '{system}' should be an object, found {type(m).__name__}")
        rates = _node(m, "metrics", f"metrics.json {system}")
        row: dict[str, Any] = {
            "run": run.label, "domain": s.get("domain"), "predicate": s.get("predicate"), "system": system,
            "status": run.status, "mapping": m.get("mapping"), "stage": s.get("stage"),
            "repeat": _count(s.get("repeat"), "repeat"), "replay": sent_nothing(_node(s, "usage", "summary.json"), "usage"),
            "counted": True,
            "n_cards": _count(m.get("n_rows"), f"{system}.n_rows"), "n_scored": _count(m.get("n_scored"), f"{system}.n_scored"),
            "errors": _count(m.get("n_errors"), f"{system}.n_errors"),
        }
        for name in EPISTEMIC_METRICS:
            row.update({f"{name}{suffix}": v for suffix, v in _rate(rates.get(name), system, name).items()})
        # What the run's model calls cost (all its systems together: the ledger is per run).
        row["cost"] = _number(_node(s, "usage", "summary.json").get("cost"), "usage.cost")
        row["path"] = str(run.path)
        rows.append(row)
    return rows


def epistemic_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Per headline metric, system, domain and predicate: the rate over that cell's runs with a
    run-level interval (repeats of a cell pool their counts; :func:`audit.stats.cluster_rate`)."""
    rows = []
    for (system, domain, predicate), every in frame.groupby(["system", "domain", "predicate"], sort=True):
        cell = every[every["counted"].to_numpy(dtype=bool)]  # a cached re-run of a sample counts once
        for metric in EPISTEMIC_METRICS:
            rate = cluster_rate(cell[f"{metric}_k"], cell[f"{metric}_n"])
            rows.append({"metric": metric, "system": system, "domain": domain, "predicate": predicate,
                         "runs": len(cell), "repeats": cell["repeat"].nunique(), "replays": len(every) - len(cell),
                         "k": math.nan if rate is None else rate["k"],
                         "n": math.nan if rate is None else rate["n"],
                         **_rate_columns("rate", rate)})
    return pd.DataFrame(rows, columns=EPISTEMIC_MATRIX_COLUMNS)


def _rate_columns(prefix: str, rate: Mapping[str, Any] | None) -> dict[str, Any]:
    """``prefix``, ``prefix_lo``, ``prefix_hi`` (NaN when undefined) from a :mod:`audit.stats` rate."""
    if rate is None:
        return {prefix: math.nan, f"{prefix}_lo": math.nan, f"{prefix}_hi": math.nan}
    return {prefix: rate["value"], f"{prefix}_lo": rate["lo"], f"{prefix}_hi": rate["hi"]}


AUDIT_SAMPLE = ["audited", "audited_model", "topic", "technique", "baseline", "auditor", "repeat"]
EPISTEMIC_SAMPLE = ["system", "domain", "predicate", "mapping", "repeat"]
"""What makes two runs the same sample: the same cell and repeat index (``samples=k``)."""


def count_replays_once(frame: pd.DataFrame, sample: Sequence[str]) -> pd.DataFrame:
    """Mark which rows count as observations (``counted``).

    A re-run of the same sweep is served from the response cache: its run dir repeats a sample
    an earlier run took, so counting it would double n and narrow every interval. Among the rows
    of one sample (same cell and repeat index; each repeat of ``samples=k`` is a fresh sample), a
    replay is not counted when a row that sent its own requests is there; replays alone count once.
    """
    frame = frame.copy()
    counted = pd.Series(True, index=frame.index)
    for _, group in frame.groupby(list(sample), sort=False, dropna=False):
        replays = group.index[group["replay"].to_numpy(dtype=bool)]
        counted[replays if len(replays) < len(group) else replays[1:]] = False
    frame["counted"] = counted
    return frame


def sent_nothing(totals: Mapping[str, Any], where: str) -> bool:
    """Every reply came from the response cache: the run replays a sample already taken."""
    calls = _count(totals.get("calls"), f"{where}.calls")
    cached = _count(totals.get("cached_calls"), f"{where}.cached_calls")
    shared = _count(totals.get("shared_calls"), f"{where}.shared_calls")
    return calls > 0 and calls - cached - shared <= 0


def censorship_map(audits: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """Per (audited model, topic, technique), the run as the unit: shares with cluster-bootstrap
    intervals over runs (:func:`audit.stats.cluster_rate`), runs and responses counted, and the
    spread of the per-run refusal share (repeats of a cell). The assistant baseline sampled
    alongside a technique is its own technique, ``assistant (baseline)``: nothing is pooled
    across techniques. Fact recall and contradiction are scored for a run's own technique only."""
    keys = ["audited", "topic", "technique"]
    if responses.empty:
        return pd.DataFrame(columns=MAP_COLUMNS)
    by_run = audits.set_index("run")
    facts = by_run[["facts_covered", "facts_contradicted", "facts_total"]]
    rows = []
    for (audited, topic, technique), every in responses.groupby(keys, sort=True):
        group = every[by_run.loc[every["run"], "counted"].to_numpy(dtype=bool)]
        own = group[~group["baseline"]]
        fact_rows = facts.loc[list(own["run"])] if len(own) else facts.iloc[0:0]
        refused = cluster_rate(group["refused"], group["n_responses"])
        row = {"audited": audited, "topic": topic, "technique": technique, "runs": len(group),
               "repeats": by_run.loc[group["run"], "repeat"].nunique(), "replays": len(every) - len(group),
               "n_responses": int(group["n_responses"].sum()), "refused": int(group["refused"].sum()),
               "official_line": int(group["official_line"].sum()),
               "facts_covered": fact_rows["facts_covered"].sum(min_count=1),
               "facts_contradicted": fact_rows["facts_contradicted"].sum(min_count=1),
               "facts_total": fact_rows["facts_total"].sum(min_count=1),
               **_rate_columns("refused_share", refused),
               **_rate_columns("official_line_share", cluster_rate(group["official_line"], group["n_responses"])),
               **_rate_columns("fact_recall", cluster_rate(fact_rows["facts_covered"], fact_rows["facts_total"])),
               **_rate_columns("contradiction_rate",
                               cluster_rate(fact_rows["facts_contradicted"], fact_rows["facts_total"])),
               "refused_min": math.nan if refused is None else refused["spread"][0],
               "refused_max": math.nan if refused is None else refused["spread"][1],
               "interval": "" if refused is None else refused["method"]}
        rows.append(row)
    return pd.DataFrame(rows, columns=MAP_COLUMNS)


def knows_vs_says(audits: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """Per (audited model, topic, technique other than assistant): what the model says under the
    technique minus what it says as the assistant on the same probes.

    Refusal and official-line shares, and facts revealed in the responses, are paired within runs
    that sampled the assistant baseline alongside the technique (the judge scores the baseline's
    responses apart; :func:`audit.stats.paired_difference`). A second facts gap compares the
    technique's runs (responses and confirmed knowledge) with the assistant-technique runs of the
    same model and topic (separate runs: :func:`audit.stats.unpaired_difference`).
    A negative refusal gap means the model refuses less when it does not speak as the assistant:
    it knows more than it says."""
    keys = ["audited", "topic"]
    if responses.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    own = responses[~responses["baseline"]].set_index("run")
    base = responses[responses["baseline"]].set_index("run")
    rows = []
    for (audited, topic), cell in audits.groupby(keys, sort=True):
        assistant_runs = cell[cell["technique"] == "assistant"]
        for technique, runs in cell[cell["technique"] != "assistant"].groupby("technique", sort=True):
            paired = [r for r in runs["run"] if r in base.index]
            a, b = own.loc[paired], base.loc[paired]
            row: dict[str, Any] = {"audited": audited, "topic": topic, "technique": technique,
                                   "paired_runs": len(paired), "assistant_runs": len(assistant_runs)}
            for cls in ("refused", "official_line"):
                gap = paired_difference(a[cls], a["n_responses"], b[cls], b["n_responses"])
                row.update(_rate_columns(f"{cls}_gap", gap))
            scored = runs.set_index("run").loc[paired]
            row.update(_rate_columns("facts_gap", paired_difference(
                scored["facts_in_responses"], scored["facts_total"],
                scored["baseline_facts_covered"], scored["baseline_facts_total"])))
            row.update(_rate_columns("facts_gap_vs_assistant_runs", unpaired_difference(
                runs["facts_covered"], runs["facts_total"], assistant_runs["facts_covered"], assistant_runs["facts_total"])))
            if len(paired) or len(assistant_runs):
                rows.append(row)
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


ZH_SUFFIX = "_zh"


def language_gaps(audits: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """Each topic against its Chinese twin (``<topic>_zh``), per audited model and technique:
    refusal share and fact recall in Chinese minus in English. Different runs answer the two
    languages, so the difference is unpaired (:func:`audit.stats.unpaired_difference`)."""
    if audits.empty:
        return pd.DataFrame(columns=LANGUAGE_COLUMNS)
    own = responses[~responses["baseline"]].set_index("run")
    rows = []
    for (audited, technique), cell in audits.groupby(["audited", "technique"], sort=True):
        topics = set(cell["topic"])
        for topic in sorted(t for t in topics if not t.endswith(ZH_SUFFIX) and f"{t}{ZH_SUFFIX}" in topics):
            en, zh = cell[cell["topic"] == topic], cell[cell["topic"] == f"{topic}{ZH_SUFFIX}"]
            en_r, zh_r = own.loc[list(en["run"])], own.loc[list(zh["run"])]
            row: dict[str, Any] = {"audited": audited, "topic": topic, "technique": technique,
                                   "runs_en": len(en), "runs_zh": len(zh),
                                   "refused_share_en": ratio(en_r["refused"].sum(), en_r["n_responses"].sum()),
                                   "refused_share_zh": ratio(zh_r["refused"].sum(), zh_r["n_responses"].sum())}
            row.update(_rate_columns("refused_gap", unpaired_difference(
                zh_r["refused"], zh_r["n_responses"], en_r["refused"], en_r["n_responses"])))
            row.update(_rate_columns("facts_gap", unpaired_difference(
                zh["facts_covered"], zh["facts_total"], en["facts_covered"], en["facts_total"])))
            rows.append(row)
    return pd.DataFrame(rows, columns=LANGUAGE_COLUMNS)


def distinct_models(audits: pd.DataFrame, *others: pd.DataFrame) -> list[pd.DataFrame]:
    """Never pool different models under one config name: where runs of one ``audited`` name
    called different ``audited.model`` ids (the config changed between sweeps), the label
    becomes ``name (model id)`` in the audits frame and in every other frame (matched by run)."""
    models = audits.groupby("audited")["audited_model"].nunique()
    ambiguous = set(models[models > 1].index)
    if not ambiguous:
        return [audits, *others]
    label = {run: f"{name} ({model})" if name in ambiguous else name
             for run, name, model in zip(audits["run"], audits["audited"], audits["audited_model"])}
    out = []
    for frame in (audits, *others):
        frame = frame.copy()
        frame["audited"] = frame["run"].map(label)
        out.append(frame)
    return out


def fact_records(run: Run, row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per key fact the judge scored in this run, with its verdict (runs scored before
    contradictions existed say revealed / not_revealed)."""
    facts = _node(run.summary, "fact_recall", "summary.json").get("facts") or []
    if not isinstance(facts, list):
        raise Unusable("summary.json: fact_recall.facts should be a list")
    out = []
    for number, fact in enumerate(facts, 1):
        if not isinstance(fact, Mapping):
            raise Unusable(f"summary.json: fact_recall.facts[{number - 1}] should be an object")
        status = fact.get("status") or ("revealed" if fact.get("covered") else "not_revealed")
        out.append({"run": row["run"], "audited": row["audited"], "topic": row["topic"], "technique": row["technique"],
                    "fact_no": number, "fact": str(fact.get("fact") or ""), "status": str(status),
                    "quote": str(fact.get("quote") or "")})
    return out


def fact_matrix(facts: pd.DataFrame) -> pd.DataFrame:
    """Per (topic, technique, fact, audited model): in how many runs the fact was revealed and
    in how many contradicted, out of the runs that scored it."""
    if facts.empty:
        return pd.DataFrame(columns=FACT_MATRIX_COLUMNS)
    grouped = facts.groupby(["topic", "technique", "fact_no", "fact", "audited"], sort=True)["status"]
    out = grouped.agg(runs="size", revealed=lambda v: int((v == "revealed").sum()),
                      contradicted=lambda v: int((v == "contradicted").sum())).reset_index()
    return out[list(FACT_MATRIX_COLUMNS)]


def _frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(columns))


def build_tables(collected: Collected) -> Tables:
    """All tables; runs the tables cannot use join the failed runs."""
    audit_rows: list[dict[str, Any]] = []
    response_rows: list[dict[str, Any]] = []
    fact_rows: list[dict[str, Any]] = []
    epistemic_rows: list[dict[str, Any]] = []
    failures = list(collected.failures)
    for run in collected.runs:
        try:
            if run.kind == CENSORSHIP:
                row, responses = audit_records(run)
                run_facts = fact_records(run, row)
                audit_rows.append(row)
                response_rows.extend(responses)
                fact_rows.extend(run_facts)
            elif run.kind == EPISTEMIC:
                epistemic_rows.extend(epistemic_records(run))
            else:
                raise Unusable("summary.json matches neither experiment (no auditor_turns/, audited_responses/, "
                               "metrics.json or cards.jsonl beside it)", status="unknown kind")
        except Unusable as exc:
            failures.append(Failure(run.path, run.label, run.kind, exc.status, str(exc)))
    audits, responses_frame, facts = distinct_models(count_replays_once(_frame(audit_rows, AUDIT_COLUMNS), AUDIT_SAMPLE),
                                                     _frame(response_rows, RESPONSE_COLUMNS),
                                                     _frame(fact_rows, FACT_COLUMNS))
    # Statistics over observations only: a cached replay of a sample is listed, never counted twice.
    counted = set(audits.loc[audits["counted"], "run"])
    counted_audits = audits[audits["counted"]]
    counted_responses = responses_frame[responses_frame["run"].isin(counted)]
    counted_facts = facts[facts["run"].isin(counted)]
    epistemic_frame = count_replays_once(_frame(epistemic_rows, EPISTEMIC_COLUMNS), EPISTEMIC_SAMPLE)
    failed = _frame([{"run": f.label, "kind": f.kind, "status": f.status, "problem": f.problem, "path": str(f.path)}
                     for f in sorted(failures, key=lambda f: natural_key(Path(f.label)))], FAILED_COLUMNS)
    return Tables(
        audits=audits,
        responses=responses_frame,
        epistemic=epistemic_frame,
        failed=failed,
        censorship_map=censorship_map(audits, responses_frame),
        gaps=knows_vs_says(counted_audits, counted_responses),
        languages=language_gaps(counted_audits, counted_responses),
        facts=facts,
        epistemic_matrix=epistemic_matrix(epistemic_frame),
        fact_matrix=fact_matrix(counted_facts),
    )
