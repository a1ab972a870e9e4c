"""Runs as pandas tables: one row per run, per target response, per epistemic answer.

These are the units a researcher fits a model on (a clustered or mixed-effects regression of
the judge's label on technique, with the run as the cluster), so every row carries the keys
of the run it came from (model, topic, technique, repeat) and nothing is pre-aggregated.
Rows are built by pure functions from :class:`~audit.runs.loading.RunFiles`; only
:func:`load_tables` touches the disk (through :func:`~audit.runs.loading.load_runs`).

A response's ``fact_quotes`` are the judge's quotes for the topic's key facts that occur in
that response (the key facts are scored once per run; the quote locates the response that
states each one). A failed target call is a row with ``error`` set and no label, never
dropped: it leaves the denominator of any share computed from ``label``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from audit.quotes import occurs
from audit.errors import UserError
from audit.io.frames import records_frame
from audit.io.table import csv_text
from audit.record.draws import Draw, iteration_draws
from audit.runs.loading import RunFiles, load_runs
from audit.record.summary import EPISTEMIC, CensorshipSummary, pin_text, served_text
from audit.record.usage import Usage

RUN_COLUMNS = ("run", "experiment", "status", "stop_reason", "audited", "model", "provider_pin", "provider", "topic", "technique", "with_baseline",
               "auditor",
               "domain", "predicate", "repeat", "iterations", "answers", "calls", "prompt_tokens",
               "cached_prompt_tokens", "cache_write_tokens", "completion_tokens", "cost", "cache_saving",
               "started_at", "finished_at", "problem", "path")
CACHE_COLUMNS = ("cached_prompt_tokens", "cache_write_tokens", "cache_saving")
"""The prompt cache's reads, writes and estimated saving (docs/audit.md): empty for a run whose files
predate them (never 0, which would say the cache was read nothing)."""
_ARM = ("response", "label", "rationale", "finish_reason", "prompt_tokens", "completion_tokens", "cost", "error",
        "fact_quotes")
DRAW_KEYS = ("draw", "action", "conversation", "branch", "parent")
"""Where a ``technique=auto`` draw sits in its run's conversation tree (None for a fixed technique)."""
RESPONSE_COLUMNS = ("run", "status", "audited", "model", "topic", "technique", "repeat", "iteration", *DRAW_KEYS,
                    "probe", *_ARM,
                    *(f"baseline_{c}" for c in _ARM), "path")
ANSWER_COLUMNS = ("run", "status", "domain", "predicate", "repeat", "system", "card", "claim", "label", "suite", "u_kind",
                  "condition", "prior_label", "gold", "pred", "passed", "error", "reason", "question", "raw_output",
                  "path")


@dataclass
class RunTables:
    runs: pd.DataFrame       # one row per run (both experiments, failed and unfinished ones too)
    responses: pd.DataFrame  # one row per audit iteration: the target's response and its paired baseline
    answers: pd.DataFrame    # one row per epistemic answer (card x system)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def run_keys(run: RunFiles) -> dict[str, Any]:
    """What identifies the cell and repeat a run sampled, for both experiments."""
    config, summary = run.config, run.record.summary
    audited, topic = _mapping(config.get("audited")), _mapping(config.get("topic"))
    technique = (run.audit.technique if run.audit else None) or _mapping(config.get("technique")).get("name")
    epistemic = run.epistemic
    served = _mapping(getattr(summary, "served", None)).get("providers")
    return {"audited": audited.get("name"), "model": audited.get("model"),
            # the pin the target's calls asked for (JSON; '' for none) and who served its draws, how many each
            "provider_pin": pin_text(audited["provider"]) if "provider" in audited else None,
            "provider": served_text(served) if isinstance(served, Mapping) else None,
            "topic": topic.get("name"),
            "technique": technique, "domain": epistemic.domain if epistemic else None,
            "predicate": epistemic.predicate if epistemic else None,
            "repeat": summary.repeat if summary is not None else None}


def run_row(run: RunFiles, *, records: bool = True) -> dict[str, Any]:
    """The run's row: its keys, state, size and what its model calls cost (the summary's usage, or
    ``usage.json``'s totals for a run killed before its summary). ``records=False`` reads nothing
    but the summary (for a run whose record files are damaged)."""
    summary = run.record.summary
    stored = summary.usage if summary is not None and summary.usage is not None else \
        _mapping(run.usage).get("totals") if records else None
    usage = Usage.of(stored) if stored else None
    recorded = _recorded(run, records)
    return {
        "run": run.label, "experiment": run.experiment, "status": run.state,
        "stop_reason": summary.stop_reason if summary is not None else None, **run_keys(run),
        "with_baseline": run.audit.with_baseline if run.audit else None,
        "auditor": _mapping(run.config.get("auditor")).get("model"),
        "iterations": run.audit.total_iterations if run.audit else None,
        "answers": len(run.answers) if records and run.experiment == EPISTEMIC else None,
        **{name: getattr(usage, name) if usage else None for name in ("calls", "prompt_tokens", "completion_tokens",
                                                                        "cost")},
        **{name: getattr(usage, name) if usage and name in recorded else None for name in CACHE_COLUMNS},
        "started_at": run.started_at if records else summary.started_at if summary else None,
        "finished_at": summary.finished_at if summary is not None else None, "problem": run.problem,
        "path": str(run.path),
    }


def _recorded(run: RunFiles, records: bool) -> set[str]:
    """The usage fields the run's files name (the summary's ``totals``, ``usage.json``'s): a summary's
    ``usage`` is read with absent fields as 0, which cannot tell "none" from "not recorded"."""
    summary = run.record.summary
    names = set(summary.totals) if isinstance(summary, CensorshipSummary) else set()
    if records and not names.issuperset(CACHE_COLUMNS):
        names |= set(_mapping(_mapping(run.usage).get("totals")))
    return names


def quoted_facts(facts: Iterable[Any], text: str | None) -> str | None:
    """The judge's key-fact quotes that occur in ``text``, as ``"<n>: <quote>"`` joined by
    `` | `` (None when none does)."""
    if not text:
        return None
    found = [f"{n}: {fact['quote']}" for n, fact in enumerate(facts, 1)
             if isinstance(fact, Mapping) and fact.get("quote") and occurs(str(fact["quote"]), text)]
    return " | ".join(found) or None


def _arm(draw: Draw, facts: Sequence[Any]) -> dict[str, Any]:
    """One sampled answer (the technique's or the baseline's): text, judge label, stop, usage."""
    usage, label, extra = draw.usage, draw.judgment, draw.model_extra or {}
    return {"response": draw.raw_response, "label": label.label if label else None,
            "rationale": label.rationale if label else None, "finish_reason": extra.get("finish_reason"),
            "prompt_tokens": usage.prompt_tokens if usage is not None else None,
            "completion_tokens": usage.completion_tokens if usage is not None else extra.get("completion_tokens"),
            "cost": usage.as_dict()["cost"] if usage is not None else None,  # money as the record writes it
            "error": draw.error,
            "fact_quotes": quoted_facts(facts, draw.raw_response)}


def response_rows(run: RunFiles) -> list[dict[str, Any]]:
    """One row per target draw of an audit: a fixed technique's iteration, its baseline answer (if
    sampled) beside it, or each draw of an auto action (a batch of 3 is 3 rows; technique
    ``auto/<technique>``), so the table counts each draw once, as the summary and compare do."""
    keys = run_keys(run)
    audit = run.audit
    facts = _mapping(audit.fact_recall if audit else None).get("facts") or []
    baseline_facts = _mapping(audit.baseline_fact_recall if audit else None).get("facts") or []
    rows = []
    for record in run.responses:
        draws = iteration_draws(record, keys["technique"])
        baseline = next((d for d in draws if d.is_baseline), None)
        paired = _arm(baseline, baseline_facts) if baseline is not None else dict.fromkeys(_ARM)
        for draw in (d for d in draws if not d.is_baseline):
            extra = draw.model_extra or {}
            row = {"run": run.label, "status": run.state, "audited": keys["audited"], "model": keys["model"],
                   "topic": keys["topic"],
                   # an auto run's draws as compare's cells name them, never pooled with a fixed technique's
                   "technique": draw.cell,
                   "repeat": keys["repeat"], "iteration": record.get("iteration"),
                   **{k: extra.get(k) for k in DRAW_KEYS if k != "draw"}, "draw": draw.id,
                   "probe": draw.prompt_sent, **_arm(draw, facts)}
            row.update({f"baseline_{k}": v for k, v in paired.items()})
            row["path"] = str(run.path)
            rows.append(row)
    return rows


def answer_rows(run: RunFiles) -> list[dict[str, Any]]:
    """One row per answer of an epistemic run, with the card's question."""
    keys = run_keys(run)
    rows = []
    for answer in run.answers:
        card = run.cards.get(answer.id)
        rows.append({"run": run.label, "status": run.state, "domain": keys["domain"], "predicate": keys["predicate"],
                     "repeat": keys["repeat"], "system": answer.system, "card": answer.id,
                     # what the card asks (ids are positions in a card set: two sets reuse them)
                     "claim": " ".join(card.claim.triple()) if card and card.claim else None,
                     "label": answer.label, "suite": answer.suite, "u_kind": answer.u_kind,
                     "condition": answer.condition, "prior_label": answer.prior_label,
                     "gold": answer.gold, "pred": answer.pred, "passed": answer.passed,
                     "error": answer.error, "reason": answer.reason, "question": card.question if card else None,
                     "raw_output": answer.raw_output, "path": str(run.path)})
    return rows


def build_run_tables(runs: Sequence[RunFiles]) -> RunTables:
    """The three tables of ``runs`` (pure but for the lazy reads of each run's records).

    A record file damaged by hand does not stop the tables: that run's row names it in
    ``problem`` and the run adds no response or answer rows (never a partial set of them).
    """
    run_rows, responses, answers = [], [], []
    for run in runs:
        try:
            mine, theirs = response_rows(run), answer_rows(run)
            row = run_row(run)
        except (UserError, ValueError) as exc:
            row, mine, theirs = {**run_row(run, records=False), "problem": str(exc)}, [], []
        run_rows.append(row)
        responses += mine
        answers += theirs
    return RunTables(runs=records_frame(run_rows, RUN_COLUMNS), responses=records_frame(responses, RESPONSE_COLUMNS),
                     answers=records_frame(answers, ANSWER_COLUMNS))


def load_tables(*dirs: str | Path) -> RunTables:
    """Every run under ``dirs`` (run dirs, ``outputs/`` trees, sweep dirs) as three DataFrames:
    ``load_tables("multirun/2026-11-23_10-00-00").responses``."""
    return build_run_tables(load_runs([Path(d) for d in dirs]))


def table_files(tables: Any, prefix: str = "") -> dict[str, str | bytes]:
    """``runs.csv``, ``responses.csv``, ``answers.csv``, and the same as Parquet when pyarrow is
    installed (Parquet keeps the column types; pyarrow stays optional: it is a large wheel); likewise
    ``<prefix><field>.csv`` for the fields of any other dataclass of DataFrames (the benchmark's)."""
    files: dict[str, str | bytes] = {}
    parquet = importlib.util.find_spec("pyarrow") is not None
    for f in fields(tables):
        frame: pd.DataFrame = getattr(tables, f.name)
        files[f"{prefix}{f.name}.csv"] = csv_text(frame)  # model text fills these cells: the one table writer
        if parquet:
            files[f"{prefix}{f.name}.parquet"] = frame.to_parquet(index=False)
    return files

