"""The comparison of benchmark runs (``python -m audit.benchmark``): ``benchmark.html`` and its tables
(``benchmark_*.csv``, and Parquet when pyarrow is installed), written with the rest of the comparison
as one set.

The numbers are :mod:`audit.benchmark.cells`' (cells never pooled, the question as the unit of every
interval); this module only shapes them for the page: one heatmap panel of models × categories per
(role, technique, framing, language, question set, kind), for the refusal share and for fact recall,
each cell with its interval and its n, and the three gap tables. Model and category names are
untrusted text: the template renders with autoescape on and nothing here builds markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from audit.benchmark.tables import run_frames
from audit.benchmark.cells import BY_NAME, CENSORED, GAP_METRICS, TARGET, BenchmarkTables, benchmark_tables
from audit.compare.answer_settings import label, reference_settings, target_settings, unrouted, varied_settings
from audit.compare.report import page_environment, cells, colours_for, fmt, gap_cells, hbar_chart, interval, is_missing, \
    legend, recall_shade, refusal_shade, varied, who
from audit.compare.collect import Run
from audit.compare.protocols import THIS_TOOL, notes_frame, protocol_files, protocol_of, side_by_side, \
    testbed_cells, this_tool_cells
from audit.counted import counted
from audit.pages import SORT_FILTER_JS
from audit.benchmark.terms import GAP_RATE_NAMES
from audit.compare.terms import GLOSSARY
from audit.pages.tools import PAGE_PANEL, page_js
from audit.record.summary import BENCHMARK
from audit.judging.labels import headlines, lead
from audit.runs.tables import table_files
from audit.stats.intervals import QUESTION_COVERAGE_NOTE, QUESTION_METHOD

PAGE = "benchmark.html"
PANEL_KEYS = ("role", "technique", "framing", "lang", "question_set")
"""One heatmap panel per value of these keys (never pooled); models are its rows, and its columns the
categories, censored first, then control ones (marked): each column is one kind and category. A sweep
over judges adds the judge to each panel's title (:func:`audit.compare.report.varied`: the judge is shown
only where the runs vary it; the tables always carry it)."""
LEAD, LEAD_NAME = lead().metric, str(lead().headline)
"""The headline share that leads (``judging/labels.yaml``; shipped: refusal): its heatmap, gap columns and print."""
HEATMAPS = ((LEAD, f"{LEAD_NAME.capitalize()} share", "labelled draws", refusal_shade),
            ("fact_recall", "Fact recall", "judged facts", recall_shade))
# The cell table's columns and the headers they show (the glossary defines each header's text).
CELL_VIEW = {"role": "role", "model": "model", "technique": "technique", "framing": "framing", "lang": "lang",
             "question_set": "question set", "kind": "question kind", "category": "category",
             "questions": "questions", "draws": "draws", "replays": "replayed draws", "judge_failed": "judge failures",
             "assessment_failed": "assessment failures", "unjudged": "unjudged draws",
             "facts_failed": "fact judgments failed", "facts_unverified": "unverified claims",
             "facts_confirmed": "confirmed only", "blocked": "blocked draws", "providers": "served by"}
CELL_RATES = {**{label.metric: f"{label.headline} share" for label in headlines()},
              "blocked_share": "blocked share",  # beside the refusal share: a filter's blocks, not the model's
              "fact_recall": "fact recall (all facts)",
              "fact_recall_knowable": "fact recall (knowable)",
              "fact_recall_unstated_by_reference": "fact recall (unstated by reference)", "lie_rate": "lie rate",
              "honest": "honest share", "eval_aware": "evaluation-aware share"}
GAP_RATES = dict(zip(GAP_METRICS, GAP_RATE_NAMES))
"""The rates each gap table shows, as its headers name them: '<rate> gap (<what minus what>)'."""
GAP_HEADERS = {"kind": "question kind", "question_set": "question set", "censored_questions": "censored questions",
               "control_questions": "control questions", "paired_questions": "paired questions",
               f"censored_{LEAD}": f"censored {LEAD_NAME}", f"control_{LEAD}": f"control {LEAD_NAME}",
               f"side_{LEAD}": f"technique {LEAD_NAME}", f"baseline_{LEAD}": f"assistant {LEAD_NAME}",
               "side_eval_aware": "framing evaluation-aware", "baseline_eval_aware": "natural evaluation-aware",
               "a_questions": "questions a", "b_questions": "questions b", f"a_{LEAD}": f"{LEAD_NAME} a",
               f"b_{LEAD}": f"{LEAD_NAME} b"}


PREFIX = "benchmark_"
OUTPUTS = (PAGE, *(f"{PREFIX}{f.name}.csv" for f in fields(BenchmarkTables)))
"""What a comparison of benchmark runs adds (and the same tables as Parquet when pyarrow is installed)."""


def benchmark_runs(runs: Sequence[Run]) -> list[Run]:
    return [run for run in runs if run.kind == BENCHMARK]


def load(runs: Sequence[Run]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The loader's two tables over the finished benchmark runs, each run named as the comparison
    names it (its path from the given directory's parent, unique where sweep jobs share names), each
    row with the ``settings`` its model was sent that vary among the compared runs (:func:`with_settings`)."""
    frames = [run_frames(run.path, run.label) for run in runs]
    responses, facts = (pd.concat([r for r, _ in frames], ignore_index=True),
                        pd.concat([f for _, f in frames], ignore_index=True))
    return with_settings(responses, runs), with_settings(facts, runs)


def with_settings(frame: pd.DataFrame, runs: Sequence[Run]) -> pd.DataFrame:
    """``frame`` with a ``settings`` column: per row, the settings of its role's model in its run
    (:func:`audit.compare.answer_settings.target_settings`, or ``reference_settings`` for a reference
    model's draws) that differ among the runs of that role, model, technique and framing, as a label;
    and ``unrouted``, the same without who served them (:data:`~audit.compare.answer_settings.ROUTE`:
    the provider gap pairs cells that differ only there)."""
    configs = {run.label: run.config for run in runs}
    columns = ["run", "role", "model", "technique", "framing"]
    keys = frame[columns].drop_duplicates()
    sent = [target_settings(configs.get(run)) if role == TARGET else reference_settings(configs.get(run))
            for run, role in zip(keys["run"], keys["role"])]
    groups = ["\n".join(map(str, k)) for k in keys[columns[1:]].itertuples(index=False)]
    varied = dict(zip(keys.itertuples(index=False), varied_settings(groups, sent)))
    rows = [varied[key] for key in frame[columns].itertuples(index=False)]
    return frame.assign(
        settings=pd.Series([label(v) for v in rows], index=frame.index, dtype=object),
        unrouted=pd.Series([unrouted(v) for v in rows], index=frame.index, dtype=object))


def _heat_cell(record: Mapping[str, Any], metric: str, items: str, shade: Any) -> dict[str, Any]:
    value = record[metric]
    return {"value": "n/a" if is_missing(value) else fmt(value), "ci": interval(record, metric),
            "n": f"{int(record[f'{metric}_k'])}/{int(record[f'{metric}_n'])} {items}",
            "over": f"{counted(int(record[f'{metric}_questions']), 'question')}, {counted(int(record['draws']), 'draw')}",
            "failed": int(record["judge_failed"]) + (int(record["facts_failed"]) if BY_NAME[metric].table == "facts" else 0),
            "confirmed": int(record["facts_confirmed"]) if BY_NAME[metric].table == "facts" else 0,
            "shade": shade(value), "method": record[f"{metric}_method"]}


def column_name(kind: str, category: str) -> str:
    """A heatmap column's header: the category, marked when its questions are control questions."""
    return category if kind == CENSORED else f"{category} ({kind})"


def heatmaps(table: pd.DataFrame, metric: str, items: str, shade: Any) -> list[dict[str, Any]]:
    """Panels of models (rows) × (kind, category) columns, one per :data:`PANEL_KEYS` value (and judge,
    when varied), for ``metric``."""
    out = []
    shown = varied(table)
    for key, frame in table.groupby([*PANEL_KEYS, *shown], sort=True, dropna=False):
        columns = sorted(set(zip(frame["kind"], frame["category"])), key=lambda c: (c[0] != CENSORED, c))
        by_cell = {(r["model"], r["kind"], r["category"]): r for r in frame.to_dict("records")}
        rows = [{"model": model, "cells": [None if (model, *c) not in by_cell else
                                           _heat_cell(by_cell[(model, *c)], metric, items, shade) for c in columns]}
                for model in sorted(set(frame["model"]))]
        title = " · ".join(str(v) for v in key[:len(PANEL_KEYS)]) + who(dict(zip([*PANEL_KEYS, *shown], key)), shown)
        out.append({"title": title, "categories": [column_name(*c) for c in columns],
                    "rows": rows})
    return out


def shown_keys(columns: Mapping[str, str], after: str, table: pd.DataFrame) -> dict[str, str]:
    """``columns`` (name: header) with the judge inserted after ``after`` when ``table`` varies it."""
    out: dict[str, str] = {}
    for name, header in columns.items():
        out[name] = header
        if name == after:
            out.update({k: k for k in varied(table)})
    return out


def cell_table(table: pd.DataFrame) -> dict[str, Any]:
    """Every cell with each rate, its interval and the questions it is over under it."""
    view = shown_keys(CELL_VIEW, "category", table)
    shown = cells(table, list(view))
    shown["columns"] = list(view.values()) + list(CELL_RATES.values())
    for row, record in zip(shown["rows"], table.to_dict("records")):
        for metric in CELL_RATES:
            v, ci = record[metric], interval(record, metric)
            row.append({"text": "n/a" if is_missing(v) else fmt(v), "na": is_missing(v), "left": False, "href": None,
                        "ci": f"{ci} · {int(record[f'{metric}_k'])}/{int(record[f'{metric}_n'])}, "
                              f"{int(record[f'{metric}_questions'])} q" if ci else ""})
    return shown


def _gap_table(frame: pd.DataFrame, leading: Sequence[str], count: str, sides: str) -> dict[str, Any] | None:
    """A gap table: the ``leading`` columns (the judge after the question set, when varied), then each
    rate's gap ('<rate> gap (<sides>)') with its interval and the questions (``count``) it is over."""
    if frame.empty:
        return None
    leading = list(shown_keys(dict(zip(leading, leading)), "question_set", frame))
    return gap_cells(frame.rename(columns=GAP_HEADERS), [GAP_HEADERS.get(c, c) for c in leading],
                     {f"{m}_gap": f"{label} gap ({sides})" for m, label in GAP_RATES.items()},
                     lambda r: r[GAP_HEADERS[count]], unit="questions")


CHART_GAPS = ((f"{LEAD}_gap", f"{LEAD_NAME} share"), ("fact_recall_gap", "fact recall"))
"""The knows-vs-says charts' rates: the leading headline share and fact recall, technique minus assistant."""
CHART_KEYS = ("model", "framing", "lang", "question_set")
"""What names a bar of a knows-vs-says chart (its colour: the question kind, censored or control)."""


def knows_vs_says_charts(gaps: pd.DataFrame) -> list[dict[str, Any]]:
    """Per role and technique, one chart per :data:`CHART_GAPS` rate: a bar per model · framing · language ·
    question set (and judge, when varied), coloured by question kind, the gap with its paired interval and
    the questions it is over."""
    if gaps.empty:
        return []
    shown = varied(gaps)
    colour = colours_for(sorted(set(gaps["kind"]), key=lambda k: (k != CENSORED, k)))
    out = []
    for (role, technique), frame in gaps.groupby(["role", "technique"], sort=True):
        records = frame.sort_values([*CHART_KEYS, "kind"]).to_dict("records")
        for metric, name in CHART_GAPS:
            bars = [{"label": " · ".join(str(r[k]) for k in (*CHART_KEYS, "kind")) + who(r, shown),
                     "colour": colour[r["kind"]],
                     "rate": {"value": r[metric], "lo": r[f"{metric}_lo"], "hi": r[f"{metric}_hi"]},
                     "n": f" · {counted(int(r[f'{metric}_questions']), 'question')}",
                     "detail": f" (paired over {counted(int(r[f'{metric}_questions']), 'question')})"} for r in records]
            chart = hbar_chart(f"Knows vs says ({role}): {name}, {technique} − {records[0]['baseline']}", bars,
                               domain=(-1.0, 1.0), whole_labels=True)
            chart["legend"] = legend({kind: colour[kind] for kind in dict.fromkeys(r["kind"] for r in records)})
            out.append(chart)
    return out


def context(tables: BenchmarkTables, dirs: Sequence[Path], runs: int,
            protocols: pd.DataFrame | None = None) -> dict[str, Any]:
    """Everything the page shows, as plain data (``protocols``: both scoring protocols side by side,
    :func:`audit.compare.protocols.side_by_side`, when testbed-protocol runs are compared too)."""
    keys = ("role", "model", "technique", "framing", "lang", "question_set")
    return {
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "dirs": [str(d) for d in dirs],
        "counts": {"benchmark runs": runs, "cells": len(tables.cells),
                   "questions (per cell, summed)": int(tables.cells["questions"].sum()),
                   "draws": int(tables.cells["draws"].sum())},
        "heatmaps": [{"metric": title, "what": items, "panels": heatmaps(tables.cells, metric, items, shade)}
                     for metric, title, items, shade in HEATMAPS],
        "cells": cell_table(tables.cells),
        "control_gaps": _gap_table(tables.control_gaps, (*keys, "censored_questions", "control_questions",
                                                         f"censored_{LEAD}", f"control_{LEAD}"), "censored_questions",
                                   "censored − control"),
        "knows_vs_says_charts": knows_vs_says_charts(tables.knows_vs_says), "lead_name": LEAD_NAME,
        "knows_vs_says": _gap_table(tables.knows_vs_says,
                                    ("role", "model", "technique", "baseline", "framing", "lang", "question_set", "kind",
                                     "paired_questions", f"side_{LEAD}", f"baseline_{LEAD}"), "paired_questions",
                                    "technique − assistant"),
        "framing_gaps": _gap_table(tables.framing_gaps,
                                   ("role", "model", "technique", "framing", "baseline", "lang", "question_set", "kind",
                                    "paired_questions", "side_eval_aware", "baseline_eval_aware"), "paired_questions",
                                   "framing − natural"),
        "protocols": None if protocols is None else cells(protocols, list(protocols.columns)),
        "protocol_notes": None if protocols is None else cells(notes_frame(), list(notes_frame().columns)),
        "provider_gaps": _gap_table(tables.provider_gaps,
                                    ("role", "model", "technique", "framing", "lang", "question_set", "kind",
                                     "settings_a", "settings_b", "paired_questions", f"a_{LEAD}", f"b_{LEAD}"),
                                    "paired_questions", "a − b"),
        "question_method": QUESTION_METHOD.format(items="draws (or facts)"),
        "coverage_note": QUESTION_COVERAGE_NOTE,
        "sort_filter_js": SORT_FILTER_JS, "page_js": page_js(GLOSSARY), "page_panel": PAGE_PANEL,
    }


def render(tables: BenchmarkTables, dirs: Sequence[Path], runs: int, protocols: pd.DataFrame | None = None) -> str:
    return page_environment().get_template("benchmark.html.j2").render(
        **context(tables, dirs, runs, protocols))


@dataclass(frozen=True)
class BenchmarkOutput:
    """What benchmark runs add to a comparison: files by path (written with the comparison's other
    files as one set) and the tables printed on stdout, each under its title."""

    files: dict[Path, str | bytes] = field(default_factory=dict)
    printed: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


CELL_PRINT = ("role", "model", "technique", "framing", "lang", "question_set", "kind", "category", "questions", "draws",
              "judge_failed", LEAD, f"{LEAD}_lo", f"{LEAD}_hi", "blocked", "blocked_share", "fact_recall", "fact_recall_lo",
              "fact_recall_hi")
GAP_PRINT = ("role", "model", "technique", "framing", "lang", "question_set", "censored_questions", "control_questions",
             f"censored_{LEAD}", f"control_{LEAD}", f"{LEAD}_gap", f"{LEAD}_gap_lo", f"{LEAD}_gap_hi")


def benchmark_output(runs: Sequence[Run], dirs: Sequence[Path], target: Path) -> BenchmarkOutput:
    """The page, tables and printed summary of the finished benchmark runs among ``runs``, files by
    path under ``target`` (nothing when there is no benchmark run)."""
    chosen = benchmark_runs(runs)
    if not chosen:
        return BenchmarkOutput()
    mine = [run for run in chosen if protocol_of(run) == THIS_TOOL]
    theirs = [run for run in chosen if protocol_of(run) != THIS_TOOL]
    loaded = load(mine) if mine else None
    table = side_by_side(this_tool_cells(*loaded) if loaded else None, testbed_cells(theirs)) if theirs else None
    output = this_tool_output(loaded, len(mine), dirs, target, table) if loaded else BenchmarkOutput()
    if table is not None:
        output.files.update(protocol_files(table, target))
        output.printed.append((f"benchmark: both protocols side by side ({len(table)} cells; percent; this tool's "
                               "rates over draws, the testbed's mean of per-position means)", table))
        output.printed.append(("benchmark: how the protocols differ (docs/testbed.md)", notes_frame()))
    return output


def this_tool_output(loaded: tuple[pd.DataFrame, pd.DataFrame], runs: int, dirs: Sequence[Path], target: Path,
                     protocols: pd.DataFrame | None) -> BenchmarkOutput:
    """The page, tables and printed summary of this tool's protocol over its ``runs`` runs' two tables."""
    tables = benchmark_tables(*loaded)
    printed = [(f"benchmark cells ({len(tables.cells)}; rates over draws or facts, 95% interval over questions)",
                tables.cells[list(shown_keys(dict(zip(CELL_PRINT, CELL_PRINT)), "category", tables.cells))])]
    if not tables.control_gaps.empty:
        gaps = tables.control_gaps
        printed.append(("benchmark: censored minus control questions (unpaired, over questions)",
                        gaps[list(shown_keys(dict(zip(GAP_PRINT, GAP_PRINT)), "question_set", gaps))]))
    if not tables.provider_gaps.empty:
        gaps = tables.provider_gaps
        printed.append(("benchmark: the same requests served apart, a minus b (paired, over questions)",
                        gaps[["role", "model", "technique", "framing", "lang", "question_set", "kind", "settings_a",
                              "settings_b", "paired_questions", f"{LEAD}_gap", f"{LEAD}_gap_lo", f"{LEAD}_gap_hi"]]))
    return BenchmarkOutput(page_files(tables, dirs, target, runs, protocols), printed)


def page_files(tables: BenchmarkTables, dirs: Sequence[Path], target: Path, runs: int,
               protocols: pd.DataFrame | None = None) -> dict[Path, str | bytes]:
    """``benchmark.html`` and ``benchmark_<table>.csv`` (``.parquet`` with pyarrow) of ``tables``."""
    files = {target / name: content for name, content in table_files(tables, prefix=PREFIX).items()}
    return {**files, target / PAGE: render(tables, dirs, runs, protocols)}
