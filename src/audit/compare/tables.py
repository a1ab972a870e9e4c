"""The comparison tables (pandas), built from the runs :mod:`audit.compare.collect` read.

Pure: no file access. A run whose summary lacks what a table needs is not dropped but
turned into a row of the failed-runs table that says what is missing.

Shares of responses are over the responses the judge classified (the labels counted in
``classifications``); a run without a judge has no shares (NaN, shown as "—"). When
several runs fall into one cell (repeats, techniques), the map pools their counts
(sum of covered facts / sum of facts) rather than averaging ratios.
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

# The epistemic rates a comparison shows, each with its 95% interval (metrics.json order).
EPISTEMIC_METRICS = ("AP", "CVRR", "FAR_NE", "LA", "accuracy", "NO_on_U")
BASELINE_SUFFIX = " (baseline)"
SHARES = tuple(f"{c}_share" for c in CLASSES)
AUDIT_COLUMNS = ("run", "audited", "audited_model", "topic", "technique", "baseline", "auditor", "status",
                 "iterations", "n_responses", *SHARES, "fact_recall", "facts_covered", "facts_total",
                 "citations_verified", "citations_unverified", "audited_errors", "tokens", "cost",
                 "started_at", "path")
RESPONSE_COLUMNS = ("run", "audited", "topic", "technique", "baseline", "n_responses", *CLASSES)
EPISTEMIC_COLUMNS = ("run", "domain", "predicate", "system", "mapping", "stage", "n_cards", "n_scored", "errors",
                     *(f"{m}{s}" for m in EPISTEMIC_METRICS for s in ("", "_lo", "_hi")), "path")
FAILED_COLUMNS = ("run", "kind", "status", "problem", "path")


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
    censorship_map: pd.DataFrame  # per (audited, topic): pooled fact recall and refusal share
    techniques: pd.DataFrame | None  # (audited, topic) x technique shares, when >= 2 techniques


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
    covered, total = _count(recall.get("covered"), "fact_recall.covered"), _count(recall.get("total"), "fact_recall.total")
    evidence, totals = _node(s, "evidence", "summary.json"), _node(s, "totals", "summary.json")
    key = {"run": run.label, "audited": str(audited.get("name") or audited.get("model")), "topic": str(topic.get("name"))}
    row = {
        **key,
        "audited_model": audited.get("model"),
        "technique": technique,
        "baseline": bool(s.get("with_baseline")),
        "auditor": auditor.get("name") or auditor.get("model"),
        "status": run.status,
        "iterations": _count(s.get("total_iterations"), "total_iterations"),
        "n_responses": counts["n_responses"],
        **{f"{c}_share": ratio(counts[c], counts["n_responses"]) for c in CLASSES},
        "fact_recall": ratio(covered, total) if recall else math.nan,
        "facts_covered": covered if recall else math.nan,
        "facts_total": total if recall else math.nan,
        "citations_verified": _count(evidence.get("verified"), "evidence.verified"),
        "citations_unverified": _count(evidence.get("unverified"), "evidence.unverified"),
        "audited_errors": _count(s.get("audited_errors"), "audited_errors"),
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
        return {"": math.nan, "_lo": math.nan, "_hi": math.nan}
    if not isinstance(value, Mapping):
        raise Unusable(f"{where} should be {{value, lo, hi, k, n}} or null, found {value!r}")
    return {"": _number(value.get("value"), "value", where), "_lo": _number(value.get("lo"), "lo", where),
            "_hi": _number(value.get("hi"), "hi", where)}


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
            "mapping": m.get("mapping"), "stage": s.get("stage"),
            "n_cards": _count(m.get("n_rows"), f"{system}.n_rows"), "n_scored": _count(m.get("n_scored"), f"{system}.n_scored"),
            "errors": _count(m.get("n_errors"), f"{system}.n_errors"),
        }
        for name in EPISTEMIC_METRICS:
            row.update({f"{name}{suffix}": v for suffix, v in _rate(rates.get(name), system, name).items()})
        row["path"] = str(run.path)
        rows.append(row)
    return rows


def censorship_map(audits: pd.DataFrame, responses: pd.DataFrame) -> pd.DataFrame:
    """Per (audited model, topic): runs, pooled fact recall and refusal share (baselines excluded)."""
    keys = ["audited", "topic"]
    if audits.empty:
        return pd.DataFrame(columns=[*keys, "runs", "facts_covered", "facts_total", "fact_recall",
                                     "refused", "n_responses", "refused_share"])
    facts = audits.groupby(keys, sort=True).agg(runs=("run", "size"), facts_covered=("facts_covered", "sum"),
                                               facts_total=("facts_total", "sum"))
    own = responses[~responses["baseline"]].groupby(keys).agg(refused=("refused", "sum"), n_responses=("n_responses", "sum"))
    out = facts.join(own).reset_index()
    out["fact_recall"] = [ratio(k, n) for k, n in zip(out["facts_covered"], out["facts_total"])]
    out["refused_share"] = [ratio(k, n) for k, n in zip(out["refused"], out["n_responses"])]
    return out


def technique_comparison(responses: pd.DataFrame) -> pd.DataFrame | None:
    """(audited, topic) rows x technique columns of refused and forthcoming shares, pooled;
    None unless at least two techniques (a baseline counts as one) were sampled."""
    if responses.empty or responses["technique"].nunique() < 2:
        return None
    grouped = responses.groupby(["audited", "topic", "technique"])[["n_responses", "refused", "forthcoming"]].sum()
    shares = pd.DataFrame({
        "refused_share": [ratio(k, n) for k, n in zip(grouped["refused"], grouped["n_responses"])],
        "forthcoming_share": [ratio(k, n) for k, n in zip(grouped["forthcoming"], grouped["n_responses"])],
    }, index=grouped.index)
    return shares.unstack("technique")


def _frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(columns))


def build_tables(collected: Collected) -> Tables:
    """All tables; runs the tables cannot use join the failed runs."""
    audit_rows: list[dict[str, Any]] = []
    response_rows: list[dict[str, Any]] = []
    epistemic_rows: list[dict[str, Any]] = []
    failures = list(collected.failures)
    for run in collected.runs:
        try:
            if run.kind == CENSORSHIP:
                row, responses = audit_records(run)
                audit_rows.append(row)
                response_rows.extend(responses)
            elif run.kind == EPISTEMIC:
                epistemic_rows.extend(epistemic_records(run))
            else:
                raise Unusable("summary.json matches neither experiment (no auditor_turns/, audited_responses/, "
                               "metrics.json or cards.jsonl beside it)", status="unknown kind")
        except Unusable as exc:
            failures.append(Failure(run.path, run.label, run.kind, exc.status, str(exc)))
    audits = _frame(audit_rows, AUDIT_COLUMNS)
    responses_frame = _frame(response_rows, RESPONSE_COLUMNS)
    failed = _frame([{"run": f.label, "kind": f.kind, "status": f.status, "problem": f.problem, "path": str(f.path)}
                     for f in sorted(failures, key=lambda f: natural_key(Path(f.label)))], FAILED_COLUMNS)
    return Tables(
        audits=audits,
        responses=responses_frame,
        epistemic=_frame(epistemic_rows, EPISTEMIC_COLUMNS),
        failed=failed,
        censorship_map=censorship_map(audits, responses_frame),
        techniques=technique_comparison(responses_frame),
    )
