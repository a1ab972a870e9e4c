"""The audit and epistemic side of the comparison: ``comparison.html``'s cells and charts and the
summary on stdout (:mod:`audit.compare.build` writes them with the CSVs and the benchmark page).

The HTML is one self-contained file (inline CSS, SVG and the shared sort/filter script of
:mod:`audit.pages`, no CDN) so it opens offline; run names link to each run's report.html by
a relative path. Topic and model names, error messages and file names are untrusted text, so the
template renders with jinja2 autoescape on; this module shapes data (formatted cells, chart
geometry) and never builds markup itself.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from audit.counted import counted
from audit.judging.counting import JUDGES_MARK, UNLABELLED_MARK, blocked_n
from audit.record.draws import ORIGINAL
from audit.compare.tables import EPISTEMIC_METRICS, HEADLINE, LEAD, SHARES, Tables
from audit.epistemic.rates import COMPARE_CHART_RATES, LOWER_IS_BETTER
from audit.pages import SORT_FILTER_JS, environment
from audit.compare.terms import GLOSSARY
from audit.pages.tools import PAGE_PANEL, page_js
from audit.stats.cards import CLUSTERED_METHOD
from audit.stats.intervals import CARD_METHOD, CLUSTER_METHOD, COVERAGE_NOTE, DIFFERENCE_METHOD, PALETTE, UNPAIRED_METHOD
from audit.pages.links import relative_href
from audit.record.summary import served_names
from audit.judging.labels import headlines, lead

PROVIDER_GAP_KEYS = ("audited", "topic", "technique")
"""The leading keys of the provider gap's rows (the auditor and judge beside them where varied)."""
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
OUTPUTS = ("comparison.html", "audits.csv", "censorship_map.csv", "knows_vs_says.csv", "language_gap.csv",
           "provider_gap.csv", "draw_labels.csv", "facts.csv", "epistemic.csv", "epistemic_matrix.csv", "runs.csv", "responses.csv", "answers.csv")
CHART_METRICS = COMPARE_CHART_RATES
LABEL_W, PLOT_W, VALUE_W, ROW_H, TOP, BOTTOM, LABEL_CHARS = 300, 260, 110, 18, 30, 6, 54
N_W = 80  # the value column's room for a bar's n (' · 12 questions')
LABEL_CHAR_W = 6.2  # SVG user units per character of a 10-unit system-ui label (a whole label's column width)
# Columns of the audits table worth a glance, on stdout and in the HTML table.
AUDIT_VIEW = ("run", "audited", "topic", "technique", "baseline", "auditor", "judge", "status", "flags", "repeat", "counted",
              "iterations", "n_responses", "unlabelled", "blocked",
              *SHARES, "fact_recall", "contradiction_rate", "baseline_fact_recall", "citations_verified",
              "citations_unverified", "tokens", "cost")
AUDIT_PRINT = ("run", "audited", "topic", "technique", "status", "iterations", "unlabelled", f"{LEAD}_share",
               "forthcoming_share", "fact_recall", "baseline_fact_recall", "cost")
MAP_PRINT = ("audited", "topic", "technique", "runs", "n_responses", "unlabelled", f"{LEAD}_share", f"{LEAD}_share_lo",
             f"{LEAD}_share_hi", "blocked", "blocked_share", "fact_recall", "fact_recall_lo", "fact_recall_hi", "facts_confirmed", "baseline_fact_recall",
             "contradiction_rate")
# the first headline share's gap with its interval, the others' beside it (judging/labels.yaml)
GAP_PRINT = ("audited", "topic", "technique", "paired_runs", *(f"{HEADLINE[0]}_gap{s}" for s in ("", "_lo", "_hi")),
             *(f"{c}_gap" for c in HEADLINE[1:]), "technique_fact_recall", "baseline_fact_recall", "facts_gap", "missing")
# Headers a reader cannot confuse: the technique's fact score and the assistant baseline's are
# different quantities (what the model says under the technique, and as itself on the same probes).
HEADERS = {"fact_recall": "facts revealed under technique", "baseline_fact_recall": "facts revealed by assistant baseline",
           "technique_fact_recall": "facts revealed under technique", "unlabelled": "unlabelled by judge",
           "unlabelled_technique": "unlabelled by judge (technique)", "unlabelled_baseline": "unlabelled by judge (baseline)",
           "n_responses": "responses"}
# Columns where a missing value means "no score" and reads n/a (never 0 or a number).
NA_COLUMNS = frozenset({"fact_recall", "baseline_fact_recall", "technique_fact_recall", "contradiction_rate"})
EPISTEMIC_VIEW = ("run", "domain", "predicate", "system", "condition", "mapping", "repeat", "counted", "n_cards", "errors", "cost")


def page_environment() -> jinja2.Environment:
    """This report's templates (one environment per process: :func:`audit.pages.environment`)."""
    return environment(TEMPLATES_DIR)


# -- cells --------------------------------------------------------------------------------

def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt(value: Any, column: str = "") -> str:
    """A table cell as text: rates with 3 decimals, cost in dollars, '—' for missing."""
    if is_missing(value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if column == "cost":
        return f"${value:.4f}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def fraction(k: Any, n: Any) -> str:
    """'3/6' from pooled counts (floats after a pandas sum), '—' when nothing was counted."""
    return "—" if is_missing(k) or is_missing(n) or not n else f"{int(k)}/{int(n)}"


def _card_fraction(k: Any, n: Any) -> str:
    """'41/62' from card-level counts; '40.7/62' when repeats disagreed (sums of per-card means)."""
    if is_missing(k) or is_missing(n) or not n:
        return "—"
    return fraction(k, n) if float(k).is_integer() and float(n).is_integer() else f"{k:.1f}/{n:.1f}"


def cells(frame: pd.DataFrame, columns: Sequence[str], links: Sequence[str | None] | None = None) -> dict[str, Any]:
    """Header (:data:`HEADERS` names where the raw name could mislead) and formatted rows of
    ``frame[columns]`` for the template's generic table; ``links`` (one per row, or None) makes
    the first cell of each row a link."""
    rows = [[{"text": "n/a" if c in NA_COLUMNS and is_missing(v) else fmt(v, c), "ci": "", "na": is_missing(v),
              "left": isinstance(v, str), "href": None}
             for c, v in zip(columns, values)]
            for values in frame[list(columns)].itertuples(index=False)]
    for row, href in zip(rows, links or ()):
        row[0]["href"] = href
    return {"columns": [HEADERS.get(c, c) for c in columns], "rows": rows}


def over(runs: int, n: Any, items: str) -> str:
    """What an interval is over, with its n: '3 runs', or for the single-run fallback
    '1 run: its 9 responses'."""
    if runs >= 2:
        return f"over {runs} runs"
    return f"1 run: over its {int(n)} {items}" if not is_missing(n) else "1 run"


def relative_paths(frame: pd.DataFrame, out: Path) -> pd.DataFrame:
    """``frame`` with its run directories (the ``path`` column) relative to the comparison's
    folder ``out``: a CSV that names ``/home/<user>/...`` leaks the machine's layout when shared
    and breaks when the folders move together; a relative path does neither."""
    if "path" not in frame.columns:
        return frame
    return frame.assign(path=[Path(os.path.relpath(Path(p).resolve(), out.resolve())).as_posix()
                              if isinstance(p, str) and p else p for p in frame["path"]])


def report_links(paths: Sequence[str], out: Path) -> list[str | None]:
    """For each run directory, its report.html relative to the comparison's folder (so the
    links survive moving the folders together), or None when the run wrote no report."""
    links: list[str | None] = []
    for path in paths:
        report = Path(path) / "report.html"
        links.append(relative_href(report, out) if report.is_file() else None)
    return links


# -- charts -------------------------------------------------------------------------------

def shorten(label: str, limit: int = LABEL_CHARS) -> str:
    """Cut the middle of a long label: the start names the cell, the end (a run's
    timestamp) tells repeated cells apart."""
    if len(label) <= limit:
        return label
    head = limit // 2
    return label[:head] + "…" + label[len(label) - (limit - head - 1):]


def hbar_chart(title: str, bars: Sequence[Mapping[str, Any]], lower_is_better: bool = False,
               domain: tuple[float, float] = (0.0, 1.0), whole_labels: bool = False) -> dict[str, Any]:
    """Geometry of a horizontal bar chart, one labelled row per bar, with a 95% interval
    whisker. ``domain`` is the axis: (0, 1) for rates, (-1, 1) for differences of rates (bars
    then grow left or right from 0). ``bars``: ``label``, ``colour``, ``rate`` ({value, lo, hi}
    or None when undefined: drawn as 'n/a', never as a zero bar), ``detail`` (tooltip text).
    Labels are cut to fit (the tooltip holds the full label), or with ``whole_labels`` kept whole
    in a label column as wide as the longest; a bar's ``n`` (' · 3 questions') follows its value, so
    what the interval is over is read without hovering."""
    label_w = max(LABEL_W, 12 + LABEL_CHAR_W * max((len(b["label"]) for b in bars), default=0)) if whole_labels else LABEL_W
    value_w = VALUE_W + N_W * any(b.get("n") for b in bars)
    width, height = label_w + PLOT_W + value_w, TOP + ROW_H * len(bars) + BOTTOM
    d0, d1 = domain

    def x(v: float) -> float:
        return label_w + PLOT_W * (v - d0) / (d1 - d0)

    rows = []
    for i, bar in enumerate(bars):
        top = TOP + ROW_H * i
        rate = bar["rate"]
        row: dict[str, Any] = {"label": bar["label"] if whole_labels else shorten(bar["label"]), "y": top + 3,
                               "h": ROW_H - 6, "cy": top + ROW_H / 2, "ty": top + ROW_H / 2 + 4, "colour": bar["colour"],
                               "x0": label_w}
        if rate is None or is_missing(rate.get("value")):
            row.update(na=True, text="n/a", title=f"{bar['label']}: undefined (nothing counted)")
        else:
            lo, hi = rate.get("lo"), rate.get("hi")
            whisker = not (is_missing(lo) or is_missing(hi))
            start, end = x(max(d0, 0.0)), x(rate["value"])
            row.update(na=False, bx=min(start, end), w=abs(end - start), whisker=whisker,
                       lo=x(lo) if whisker else None, hi=x(hi) if whisker else None,
                       text=f"{rate['value']:+.2f}" if d0 < 0 else f"{rate['value']:.2f}",
                       title=f"{bar['label']}: {rate['value']:.3f}"
                             + (f", 95% interval [{lo:.3f}, {hi:.3f}]" if whisker else ", no interval")
                             + bar.get("detail", ""))
            if whisker:
                row["text"] += f" [{lo:.2f}, {hi:.2f}]"
            row["text"] += bar.get("n", "")
        rows.append(row)
    ticks = [{"v": round(d0 + (d1 - d0) * f, 2), "x": x(d0 + (d1 - d0) * f)} for f in (0, 0.25, 0.5, 0.75, 1.0)]
    return {"title": title + (" (lower is better)" if lower_is_better else ""), "w": width, "h": height,
            "rows": rows, "ticks": ticks, "top": TOP, "bottom": height - BOTTOM, "tx": label_w + PLOT_W + 6,
            "legend": []}


def colours_for(keys: Sequence[str]) -> dict[str, str]:
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(dict.fromkeys(keys))}


def legend(colour: Mapping[str, str]) -> list[dict[str, str]]:
    """A chart's key: one swatch per colour it draws, named."""
    return [{"name": name, "colour": c} for name, c in colour.items()]


def _rate(record: Mapping[str, Any], prefix: str) -> dict[str, float]:
    return {"value": record[prefix], "lo": record[f"{prefix}_lo"], "hi": record[f"{prefix}_hi"]}


WHO = ("auditor", "judge", "settings", "mapping")
"""Cell keys a page shows only where the runs compared vary them (the tables always carry them): a
censorship cell's auditor and judge, an epistemic system's settings (:mod:`audit.compare.answer_settings`)
and the answer-to-action mapping its rates were scored with."""


def varied(frame: pd.DataFrame) -> list[str]:
    """The keys of :data:`WHO` that take more than one value in ``frame`` (a sweep over auditors, judges or
    an epistemic system's settings)."""
    return [k for k in WHO if k in frame and frame[k].nunique() > 1]


def served_apart(frame: pd.DataFrame) -> bool:
    """Whether the rows of ``frame`` were served by different providers (its ``providers`` name others,
    whatever the counts): then a page shows who served each."""
    return "providers" in frame and len({served_names(v) for v in frame["providers"]}) > 1


def with_varied(columns: Sequence[str], frame: pd.DataFrame, after: str) -> list[str]:
    """``columns`` with the keys of :data:`WHO` that ``frame`` varies and ``columns`` lacks inserted after
    ``after``, and ``providers`` where its rows were served apart (:func:`served_apart`)."""
    extra = [k for k in varied(frame) if k not in columns] + (["providers"] if served_apart(frame) else [])
    at = list(columns).index(after) + 1
    return [*columns[:at], *extra, *columns[at:]]


def who(record: Mapping[str, Any], shown: Sequence[str]) -> str:
    """`` · auditor X · judge Y`` for the ``shown`` keys ('' when no sweep varies them)."""
    return "".join(f" · {k} {record[k]}" for k in shown)


def censorship_charts(cmap: pd.DataFrame, gaps: pd.DataFrame) -> list[dict[str, Any]]:
    """Refusal share and fact recall per (audited model, topic, technique), one colour per
    technique, run-level intervals; and the knows-vs-says gap per (model, topic, technique)."""
    if cmap.empty:
        return []
    colour = colours_for(sorted(set(cmap["technique"])))
    records = cmap.to_dict("records")
    shown = varied(cmap)

    def bars(prefix: str, k: str, n: str, runs: str, items: str) -> list[dict[str, Any]]:
        return [{"label": f"{r['audited']} · {r['topic']} · {r['technique']}{who(r, shown)}",
                 "colour": colour[r["technique"]],
                 "rate": _rate(r, prefix),
                 "detail": f" ({fraction(r[k], r[n])} {items}; interval {over(r[runs], r[n], items)})"} for r in records]

    charts = [hbar_chart("Refusal share of labelled responses per audited model · topic · technique",
                         bars(f"{LEAD}_share", LEAD, "n_labelled", "runs", "labelled responses")),
              hbar_chart("Facts revealed per audited model · topic · technique (n/a: no score)",
                         bars("fact_recall", "facts_revealed", "facts_total", "fact_runs", "facts"))]
    for chart in charts:
        chart["legend"] = legend(colour)
    if not gaps.empty and gaps["paired_runs"].sum():  # a row without a baseline has no gap to draw
        gap_bars = [{"label": f"{r['audited']} · {r['topic']} · {r['technique']}{who(r, shown)}",
                     "colour": colour.get(r["technique"], PALETTE[0]),
                     "rate": _rate(r, f"{LEAD}_gap"), "detail": f" ({counted(int(r['paired_runs']), 'paired run')})"}
                    for r in gaps.to_dict("records")]
        gap = hbar_chart(f"Knows vs says: {lead().headline} share, technique minus assistant baseline", gap_bars, domain=(-1.0, 1.0))
        # its key names the techniques it draws (never the assistant's, which is the baseline of every bar)
        gap["legend"] = legend({t: colour.get(t, PALETTE[0]) for t in dict.fromkeys(gaps["technique"])})
        charts.append(gap)
    return charts


def epistemic_charts(matrix: pd.DataFrame) -> list[dict[str, Any]]:
    """One chart per headline metric, one bar per cell (system × domain/predicate, its runs'
    cards together, as in the matrices: never one bar per run), coloured by system with a legend;
    labels are whole (the label column is as wide as the longest)."""
    if matrix.empty:
        return []
    colour = colours_for(sorted(set(matrix["system"])))
    shown = varied(matrix)
    charts = []
    for metric in CHART_METRICS:
        frame = matrix[matrix["metric"] == metric].sort_values(["domain", "predicate", "condition", "system", *shown])
        bars = [{"label": f"{_cell_column(r, _mixes(matrix))} · {r['system']}{who(r, shown)}", "colour": colour[r["system"]],
                 "rate": {"value": r["rate"], "lo": r["rate_lo"], "hi": r["rate_hi"]},
                 "detail": f" ({_card_fraction(r['k'], r['n'])} cards, {r['runs']} run(s); {_interval_unit(r)})"}
                for r in frame.to_dict("records")]
        chart = hbar_chart(metric, bars, lower_is_better=metric in LOWER_IS_BETTER, whole_labels=True)
        chart["legend"] = legend(colour)
        charts.append(chart)
    return charts


# -- the map ------------------------------------------------------------------------------

def recall_shade(recall: float) -> str:
    """Cell background: red for low fact recall, green for high, grey when unknown."""
    if is_missing(recall):
        return "#f2f2f2"
    return f"hsl({round(120 * recall)}, 60%, 88%)"


def refusal_shade(share: float) -> str:
    """Refusal heatmap background: white for none refused, deep red for all, grey when nothing was labelled."""
    if is_missing(share):
        return "#f2f2f2"
    return f"hsl(0, 70%, {round(97 - 34 * share)}%)"  # light enough to read the interval on


def interval(record: Mapping[str, Any], prefix: str) -> str:
    """'[0.12, 0.40]' or '' when the rate has no interval."""
    lo, hi = record[f"{prefix}_lo"], record[f"{prefix}_hi"]
    return "" if is_missing(lo) or is_missing(hi) else f"[{lo:.2f}, {hi:.2f}]"


def censorship_matrices(cmap: pd.DataFrame) -> list[dict[str, Any]]:
    """Small multiples: one audited models x topics matrix per technique (never pooled), each
    cell its rates with run-level intervals, its runs and responses, and the per-run spread."""
    out = []
    shown = varied(cmap)
    providers = served_apart(cmap)
    for key, frame in cmap.groupby(["technique", *shown], sort=True):
        technique = key[0]
        models, topics = sorted(set(frame["audited"])), sorted(set(frame["topic"]))
        by_cell = {(r["audited"], r["topic"]): r for r in frame.to_dict("records")}
        rows = []
        for model in models:
            row = []
            for topic in topics:
                r = by_cell.get((model, topic))
                if r is None:
                    row.append(None)
                    continue
                spread = "" if r["runs"] < 2 or is_missing(r[f"{LEAD}_min"]) else \
                    f"runs ranged {r[f'{LEAD}_min']:.2f}–{r[f'{LEAD}_max']:.2f}"
                baseline_cell = str(technique).startswith("assistant (")
                unlabelled = int(r["unlabelled"])
                row.append({"recall_label": "facts revealed by assistant baseline" if baseline_cell
                            else "facts revealed under technique",
                            "recall": "n/a" if is_missing(r["fact_recall"]) else fmt(r["fact_recall"]),
                            "recall_ci": interval(r, "fact_recall"),
                            "recall_over": over(r["fact_runs"], r["facts_total"], "facts") if r["fact_runs"] else
                            "no run with a fact score",
                            "facts": fraction(r["facts_revealed"], r["facts_total"]),
                            "baseline_recall": None if baseline_cell or not r["baseline_fact_runs"] else {
                                "value": fmt(r["baseline_fact_recall"]), "ci": interval(r, "baseline_fact_recall"),
                                "facts": fraction(r["baseline_facts_revealed"], r["baseline_facts_total"]),
                                "over": over(r["baseline_fact_runs"], r["baseline_facts_total"], "facts")},
                            "contradicted": fraction(r["facts_contradicted"], r["facts_total"]),
                            "confirmed": fraction(r["facts_confirmed"], r["facts_total"]),
                            "off_language": r["off_language_runs"],
                            "refused": fmt(r[f"{LEAD}_share"]), "refused_ci": interval(r, f"{LEAD}_share"),
                            "refused_over": over(r["runs"], r["n_labelled"], "labelled responses"),
                            "blocked": fraction(r["blocked"], blocked_n(r["n_responses"], r["blocked"]))
                            if r["blocked"] else "",
                            "blocked_share": fmt(r["blocked_share"]), "blocked_ci": interval(r, "blocked_share"),
                            "responses": fraction(r[LEAD], r["n_labelled"]), "runs": r["runs"],
                            "repeats": r["repeats"], "replays": r["replays"],
                            "n_responses": r["n_responses"], "unlabelled": unlabelled,
                            "unlabelled_pct": "" if not unlabelled else f"{r['unlabelled_share']:.0%}",
                            "marked": bool(r["unlabelled_marked"]), "spread": spread,
                            "judges_mark": r["judges_mark"] or "", "disputed": int(r["disputed"]),
                            "shade": recall_shade(r["fact_recall"]),
                            "refused_shade": refusal_shade(r[f"{LEAD}_share"]),
                            "served_by": r["providers"] if providers else ""})
            rows.append({"model": model, "cells": row})
        out.append({"technique": technique + who(dict(zip(["technique", *shown], key)), shown), "topics": topics,
                    "rows": rows})
    return out


def gap_shade(gap: float) -> str:
    """Knows-vs-says grid background: blue where the technique refuses less than the assistant (the
    model says more than it does as the assistant), red where it refuses more, grey without a gap."""
    if is_missing(gap):
        return "#f2f2f2"
    return f"hsl({210 if gap < 0 else 0}, 70%, {round(97 - 34 * min(abs(gap), 1.0))}%)"


def gap_matrices(gaps: pd.DataFrame) -> list[dict[str, Any]]:
    """The knows-vs-says grid: one audited models x topics grid per technique (never pooled), each cell
    the refusal gap (technique minus the assistant baseline of the same runs, paired by run) with its
    95% interval and the paired runs it is over; a cell without a paired run says so."""
    out = []
    shown = varied(gaps)
    for key, frame in gaps.groupby(["technique", *shown], sort=True):
        by_cell = {(r["audited"], r["topic"]): r for r in frame.to_dict("records")}
        topics = sorted(set(frame["topic"]))
        rows = []
        for model in sorted(set(frame["audited"])):
            row = []
            for topic in topics:
                r = by_cell.get((model, topic))
                gap = None if r is None else r[f"{LEAD}_gap"]
                row.append(None if r is None else {
                    "gap": "—" if is_missing(gap) else f"{gap:+.2f}", "ci": interval(r, f"{LEAD}_gap"),
                    "over": f"over {counted(int(r['paired_runs']), 'paired run')}" if r["paired_runs"]
                    else "no run with a baseline", "shade": gap_shade(gap)})
            rows.append({"model": model, "cells": row})
        out.append({"technique": key[0] + who(dict(zip(["technique", *shown], key)), shown), "topics": topics,
                    "rows": rows})
    return out


def fact_matrices(matrix: pd.DataFrame) -> list[dict[str, Any]]:
    """Per topic and technique: key facts (rows) x audited models (columns), each cell how many
    of the model's runs revealed and contradicted the fact."""
    out = []
    shown = varied(matrix)
    for key, frame in matrix.groupby(["topic", "technique", *shown], sort=True):
        topic, technique = key[0], key[1] + who(dict(zip(["topic", "technique", *shown], key)), shown)
        models = sorted(set(frame["audited"]))
        by_cell = {(r["fact_no"], r["audited"]): r for r in frame.to_dict("records")}
        rows = []
        for (number, fact), _ in frame.groupby(["fact_no", "fact"], sort=True):
            row = []
            for model in models:
                r = by_cell.get((number, model))
                row.append(None if r is None else {
                    "revealed": f"{r['revealed']}/{r['runs']}", "contradicted": r["contradicted"],
                    "confirmed": r["confirmed"],
                    "shade": recall_shade(r["revealed"] / r["runs"]) if not r["contradicted"] else "#f6c4c1"})
            rows.append({"fact": fact, "cells": row})
        out.append({"topic": topic, "technique": technique, "models": models, "rows": rows})
    return out


def _cell_column(r: Mapping[str, Any], suites: bool = False) -> str:
    """A matrix column: domain/predicate, plus the condition when it is not the default in_context,
    plus the suite mix when ``suites`` (the matrix holds more than one mix)."""
    condition = r.get("condition")
    tail = f" ({condition})" if isinstance(condition, str) and condition != "in_context" else ""
    mix = f" [{r['suites'] or 'no suites'}]" if suites else ""
    return f"{r['domain']}/{r['predicate']}{tail}{mix}"


def _mixes(matrix: pd.DataFrame) -> bool:
    """Whether the matrix's cells differ in suite mix, so each column names its own."""
    return "suites" in matrix and matrix["suites"].nunique() > 1


def _interval_unit(r: Mapping[str, Any]) -> str:
    """What a matrix cell's interval is over: cards, how many times each was answered and the answers."""
    unit = "interval over cards"
    if r.get("method") == CLUSTERED_METHOD:
        unit = f"interval over {r['cards']:.0f} cards, each answered up to {r['card_repeats']:.0f} times (nested)"
    # the answers behind the cards, where some card was answered more than once (a repeat, or a card
    # two card sets share): each card is counted once, and the answers are shown beside them
    return unit + (f", {r['answers']:.0f} answers" if r.get("answers", 0) > r["cards"] else "")


def epistemic_matrices(matrix: pd.DataFrame) -> list[dict[str, Any]]:
    """One system x (domain/predicate) matrix per headline metric, each cell the rate, its
    interval, the runs and the cards behind it."""
    out = []
    shown = varied(matrix)
    for metric in EPISTEMIC_METRICS:
        frame = matrix[matrix["metric"] == metric]
        if frame.empty:
            continue
        columns = sorted({_cell_column(r, _mixes(matrix)) for r in frame.to_dict("records")})
        # a row per system and its varied settings (never one row pooling two prompts)
        by_cell = {(r["system"] + who(r, shown), _cell_column(r, _mixes(matrix))): r for r in frame.to_dict("records")}
        rows = []
        for system in sorted({r["system"] + who(r, shown) for r in frame.to_dict("records")}):
            row = []
            for column in columns:
                r = by_cell.get((system, column))
                row.append(None if r is None else {"value": fmt(r["rate"]), "ci": interval(r, "rate"),
                                                   "detail": f"{_card_fraction(r['k'], r['n'])} cards · "
                                                             f"{_interval_unit(r)} · {r['runs']} run(s)"
                                                             + (f" ({r['repeats']} repeats)" if r["repeats"] > 1 else "")
                                                             + (f" · {r['replays']} cached re-run(s) not counted"
                                                                if r["replays"] else ""),
                                                   "na": is_missing(r["rate"])})
            rows.append({"system": system, "cells": row})
        out.append({"metric": metric + (" ↓" if metric in LOWER_IS_BETTER else ""), "columns": columns, "rows": rows})
    return out


def gap_cells(gaps: pd.DataFrame, leading: Sequence[str], named: Mapping[str, str], runs: Callable[[Mapping[str, Any]], int],
              trailing: Sequence[str] = (), unit: str = "runs") -> dict[str, Any]:
    """A table of differences: the ``leading`` columns as they are, then each ``named`` gap
    (column prefix -> header) signed, with its interval and the ``unit`` it is over under it
    (``runs`` of a row: how many), then the ``trailing`` columns."""
    table = cells(gaps, leading)
    table["columns"] += list(named.values()) + [HEADERS.get(c, c) for c in trailing]
    tail = cells(gaps, trailing)["rows"] if trailing else [[] for _ in range(len(gaps))]
    for row, record, extra in zip(table["rows"], gaps.to_dict("records"), tail):
        for prefix in named:
            v, ci = record[prefix], interval(record, prefix)
            row.append({"text": "—" if is_missing(v) else f"{v:+.3f}", "ci": f"{ci} over {runs(record)} {unit}" if ci else "",
                        "na": is_missing(v), "left": False, "href": None})
        row.extend(extra)
    return table


def epistemic_cells(frame: pd.DataFrame, out: Path) -> dict[str, Any]:
    """The epistemic table for the HTML: each rate with its interval under it."""
    view = (*EPISTEMIC_VIEW[:5], *(k for k in varied(frame) if k not in EPISTEMIC_VIEW), *EPISTEMIC_VIEW[5:])
    table = cells(frame, view, report_links(frame["path"], out))
    table["columns"] += [f"{m} ↓" if m in LOWER_IS_BETTER else m for m in EPISTEMIC_METRICS]
    for row, record in zip(table["rows"], frame.to_dict("records")):
        for m in EPISTEMIC_METRICS:
            v, lo, hi = record[m], record[f"{m}_lo"], record[f"{m}_hi"]
            ci = "" if is_missing(lo) or is_missing(hi) else f"[{lo:.2f}, {hi:.2f}]"
            row.append({"text": fmt(v), "ci": ci, "na": is_missing(v), "left": False, "href": None})
    return table


# -- outputs ------------------------------------------------------------------------------

def _kappa(value: Any, lo: Any, hi: Any, n: Any = None) -> str:
    if is_missing(value):
        return "undefined"
    interval = "" if lo is None or is_missing(lo) else f" [{lo:.2f}, {hi:.2f}]"
    return f"{value:.2f}{interval}" + ("" if n is None else f" (n={n})")


def judging_rows(side: pd.DataFrame) -> list[dict[str, Any]]:
    """The side-by-side table of two judgings as the page shows it."""
    return [{"audited": r["audited"], "topic": r["topic"], "technique": r["technique"], "runs": r["runs"],
             "refused_a": fmt(r[f"{LEAD}_share_a"]), "refused_b": fmt(r[f"{LEAD}_share_b"]),
             "disputed": f"{r['disputed_a']} / {r['disputed_b']}",
             "differing": fraction(r["differing"], r["n_both"]),
             "kappa": _kappa(r["kappa"], r["kappa_lo"], r["kappa_hi"], r["n_both"]),
             "facts_differing": fraction(r["facts_differing"], r["facts_n_both"]),
             "recall": f"{fmt(r['fact_recall_a'])} / {fmt(r['fact_recall_b'])}",
             "facts_kappa": _kappa(r["facts_kappa"], r["facts_kappa_lo"], r["facts_kappa_hi"], r["facts_n_both"]),
             "marked": bool(r["marked"]), "mark": r["mark"]} for r in side.to_dict("records")]


def build_context(tables: Tables, dirs: Sequence[Path], out: Path,
                  judgings: Sequence[str] = (ORIGINAL,)) -> dict[str, Any]:
    """Everything the template shows, as plain data; links are relative to ``out``."""
    return {
        "judging": {"shown": judgings[0], "other": judgings[1] if len(judgings) > 1 else None},
        "judgings": judging_rows(tables.judgings) if not tables.judgings.empty else None,
        "judgings_method": "over runs when a cell has several, else over its responses; value ± t × bootstrap SE",
        "judges_mark": f"{JUDGES_MARK:.0%}",
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "dirs": [str(d) for d in dirs],
        "counts": {"audit runs": len(tables.audits), "epistemic runs": tables.epistemic["run"].nunique(),
                   "epistemic rows (run x system)": len(tables.epistemic), "failed or unusable": len(tables.failed)},
        "matrices": censorship_matrices(tables.censorship_map),
        "censorship_charts": censorship_charts(tables.censorship_map, tables.gaps),
        "gap_matrices": gap_matrices(tables.gaps) if not tables.gaps.empty else [],
        "gaps": gap_cells(tables.gaps, ("audited", "topic", "technique", *varied(tables.gaps), "runs", "paired_runs",
                                        "runs_without_baseline",
                                        "assistant_runs", "unlabelled_technique", "unlabelled_baseline",
                                        "technique_fact_recall", "baseline_fact_recall"),
                          {**{f"{label.name}_gap": f"{label.headline} gap" for label in headlines()},
                           "facts_gap": "facts gap (technique − assistant baseline)"},
                          lambda r: r["paired_runs"], ("missing",)) if not tables.gaps.empty else None,
        "gaps_vs_assistant": gap_cells(tables.gaps, ("audited", "topic", "technique", *varied(tables.gaps), "runs",
                                                     "assistant_runs"),
                                       {"facts_gap_vs_assistant_runs": "facts gap vs assistant-technique runs"},
                                       lambda r: r["runs"] + r["assistant_runs"]) if not tables.gaps.empty else None,
        "no_baseline_runs": 0 if tables.gaps.empty else int(tables.gaps["runs_without_baseline"].sum()),
        "provider_gaps": gap_cells(tables.provider_gaps, (*PROVIDER_GAP_KEYS, *varied(tables.provider_gaps),
                                                          "settings_a", "settings_b", "providers_a", "providers_b",
                                                          "runs_a", "runs_b", "unlabelled_a", "unlabelled_b",
                                                          f"{LEAD}_share_a", f"{LEAD}_share_b", "fact_recall_a",
                                                          "fact_recall_b"),
                                   {f"{LEAD}_gap": f"{lead().headline} gap (a − b)", "facts_gap": "facts gap (a − b)"},
                                   lambda r: r["runs_a"] + r["runs_b"])
        if not tables.provider_gaps.empty else None,
        "languages": gap_cells(tables.languages, ("audited", "topic", "technique", *varied(tables.languages),
                                                  "runs_en", "runs_zh",
                                                  "off_language_runs", "unlabelled_en", "unlabelled_zh", f"{LEAD}_share_en", f"{LEAD}_share_zh"),
                               {f"{LEAD}_gap": f"{lead().headline} gap (zh − en)", "facts_gap": "facts gap (zh − en)"},
                               lambda r: r["runs_en"] + r["runs_zh"])
        if not tables.languages.empty else None,
        "cluster_method": CLUSTER_METHOD, "card_method": CARD_METHOD, "clustered_method": CLUSTERED_METHOD,
        "difference_method": DIFFERENCE_METHOD, "unpaired_method": UNPAIRED_METHOD, "coverage_note": COVERAGE_NOTE,
        "unlabelled_mark": f"{UNLABELLED_MARK:.0%}",
        "unlabelled_total": int(tables.audits["unlabelled"].sum() + tables.audits["baseline_unlabelled"].fillna(0).sum())
        if not tables.audits.empty else 0,
        "audits": cells(tables.audits, with_varied(AUDIT_VIEW, tables.audits, "judge"),
                        report_links(tables.audits["path"], out))
        if not tables.audits.empty else None,
        "epistemic": epistemic_cells(tables.epistemic, out) if not tables.epistemic.empty else None,
        "epistemic_charts": epistemic_charts(tables.epistemic_matrix),
        "failed": cells(tables.failed, ("run", "kind", "status", "problem"), report_links(tables.failed["path"], out))
        if not tables.failed.empty else None,
        "fact_matrices": fact_matrices(tables.fact_matrix),
        "epistemic_matrices": epistemic_matrices(tables.epistemic_matrix),
        "sort_filter_js": SORT_FILTER_JS, "page_js": page_js(GLOSSARY), "page_panel": PAGE_PANEL,
    }


def render_html(tables: Tables, dirs: Sequence[Path], out: Path, judgings: Sequence[str] = (ORIGINAL,),
                benchmark_page: bool = False) -> str:
    """The comparison page; ``benchmark_page``: benchmark runs were compared, their page is beside it."""
    return page_environment().get_template("compare.html.j2").render(
        **build_context(tables, dirs, out, judgings), benchmark_page=benchmark_page, lead=lead())


def _text_table(frame: pd.DataFrame) -> str:
    formatters: dict[str, Callable[[Any], str]] = {
        c: (lambda v, c=c: "n/a" if c in NA_COLUMNS and is_missing(v) else fmt(v, c)) for c in frame.columns}
    return frame.to_string(index=False, formatters=formatters, na_rep="—")


def summary_text(tables: Tables, out: Path, extra: Sequence[str] = (),
                 printed: Sequence[tuple[str, pd.DataFrame]] = ()) -> str:
    """What stdout shows: the tables at a glance, failed runs, and where the files went (``extra``:
    the benchmark page's files and ``printed`` its tables, when benchmark runs were compared)."""
    parts = []
    if not tables.audits.empty:
        audits = tables.audits[with_varied(AUDIT_PRINT, tables.audits, "technique")]
        parts.append(f"censorship audits ({counted(len(tables.audits), 'run')})\n{_text_table(audits)}")
        view = tables.censorship_map[with_varied(MAP_PRINT, tables.censorship_map, "technique")]
        parts.append(f"per audited model x topic x technique (shares of labelled responses; {CLUSTER_METHOD}; "
                     f"one run: Wilson over its responses or facts)\n{_text_table(view)}")
    if not tables.judgings.empty:
        first = tables.judgings.iloc[0]
        view = tables.judgings[["audited", "topic", "technique", "runs", f"{LEAD}_share_a", f"{LEAD}_share_b",
                                "n_both", "differing", "kappa", "kappa_lo", "kappa_hi", "facts_differing", "mark"]]
        parts.append(f"two judgings side by side: a = {first['judging_a']}, b = {first['judging_b']} (marked: "
                     f"they differ on more than {JUDGES_MARK:.0%} of the responses or fact verdicts)\n"
                     f"{_text_table(view)}")
    if not tables.gaps.empty:
        view = tables.gaps[[*GAP_PRINT[:3], *varied(tables.gaps), *GAP_PRINT[3:]]]
        parts.append(f"knows vs says: technique minus assistant baseline\n{_text_table(view)}")
    if not tables.provider_gaps.empty:
        view = tables.provider_gaps[[*PROVIDER_GAP_KEYS[:3], *varied(tables.provider_gaps), "settings_a", "settings_b",
                                     "providers_a", "providers_b", "runs_a", "runs_b", f"{LEAD}_gap", f"{LEAD}_gap_lo",
                                     f"{LEAD}_gap_hi", "facts_gap"]]
        parts.append(f"provider gap: the same requests served apart (a minus b; unpaired, over runs)\n{_text_table(view)}")
    if not tables.languages.empty:
        view = tables.languages[["audited", "topic", "technique", "runs_en", "runs_zh", f"{LEAD}_share_en",
                                 f"{LEAD}_share_zh", f"{LEAD}_gap", "facts_gap"]]
        parts.append(f"language gap: <topic>_zh minus <topic>\n{_text_table(view)}")
    if not tables.epistemic.empty:
        view = tables.epistemic[["run", "domain", "predicate", "system", *varied(tables.epistemic), "n_cards", "errors",
                                 *EPISTEMIC_METRICS, "cost"]]
        parts.append(f"epistemic ({len(view)} run x system rows)\n{_text_table(view)}")
        matrix = tables.epistemic_matrix  # a column per cell, as on the page: never the first of several
        matrix = matrix.assign(cell=[_cell_column(r, _mixes(matrix)) for r in matrix.to_dict("records")])
        for metric in CHART_METRICS:
            pivot = matrix[matrix["metric"] == metric].pivot_table(index=["system", *varied(matrix)], columns="cell", values="rate",
                                                                   aggfunc="first", dropna=False)
            parts.append(f"{metric}: system x domain/predicate (over runs; interval unit: cards, repeats nested in them)\n{_text_table(pivot.reset_index())}")
    parts += [f"{title}\n{_text_table(frame)}" for title, frame in printed]
    if not tables.failed.empty:
        parts.append(f"failed or unusable runs ({len(tables.failed)})\n"
                     f"{_text_table(tables.failed[['run', 'kind', 'status', 'problem']])}")
    parts.append(f"wrote {', '.join((*OUTPUTS, *sorted(extra)))} to {out}")
    return "\n\n".join(parts)
