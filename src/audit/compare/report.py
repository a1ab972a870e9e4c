"""Write the comparison: ``comparison.html``, ``audits.csv``, ``epistemic.csv`` and a
summary on stdout.

The HTML is one self-contained file (inline CSS and SVG, no CDN, no JS) so it opens
offline. Topic and model names, error messages and file names are untrusted text, so the
template renders with jinja2 autoescape on; this module shapes data (formatted cells, chart
geometry) and never builds markup itself.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from audit.compare.collect import collect
from audit.compare.tables import EPISTEMIC_METRICS, SHARES, Tables, build_tables
from audit.epistemic.metrics import LOWER_IS_BETTER, wilson
from audit.epistemic.report import PALETTE
from audit.errors import UserError
from audit.io.atomic import write_text

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
OUTPUTS = ("comparison.html", "audits.csv", "epistemic.csv")
CHART_METRICS = ("AP", "CVRR", "FAR_NE", "LA")
LABEL_W, PLOT_W, VALUE_W, ROW_H, TOP, BOTTOM, LABEL_CHARS = 300, 260, 110, 18, 30, 6, 54
# Columns of the audits table worth a glance, on stdout and in the HTML table.
AUDIT_VIEW = ("run", "audited", "topic", "technique", "baseline", "auditor", "status", "iterations", "n_responses",
              *SHARES, "fact_recall", "citations_verified", "citations_unverified", "tokens", "cost")
AUDIT_PRINT = ("run", "audited", "topic", "technique", "status", "iterations", "refused_share",
               "forthcoming_share", "fact_recall", "cost")
EPISTEMIC_VIEW = ("run", "domain", "predicate", "system", "mapping", "n_cards", "errors")


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


def cells(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    """Header and formatted rows of ``frame[columns]`` for the template's generic table."""
    rows = [[{"text": fmt(v, c), "ci": "", "na": is_missing(v), "left": isinstance(v, str)} for c, v in zip(columns, values)]
            for values in frame[list(columns)].itertuples(index=False)]
    return {"columns": list(columns), "rows": rows}


def flat(frame: pd.DataFrame) -> pd.DataFrame:
    """Index into columns and 2-level columns into 'metric · technique' names, for display."""
    out = frame.reset_index()
    out.columns = [" · ".join(str(p) for p in c if p != "") if isinstance(c, tuple) else str(c) for c in out.columns]
    return out


# -- charts -------------------------------------------------------------------------------

def shorten(label: str, limit: int = LABEL_CHARS) -> str:
    """Cut the middle of a long label: the start names the cell, the end (a run's
    timestamp) tells repeated cells apart."""
    if len(label) <= limit:
        return label
    head = limit // 2
    return label[:head] + "…" + label[len(label) - (limit - head - 1):]


def hbar_chart(title: str, bars: Sequence[Mapping[str, Any]], lower_is_better: bool = False) -> dict[str, Any]:
    """Geometry of a horizontal bar chart of rates in [0, 1], one labelled row per bar,
    with a 95% interval whisker. ``bars``: ``label``, ``colour``, ``rate`` ({value, lo, hi}
    or None when undefined: drawn as 'n/a', never as a zero bar), ``detail`` (tooltip text)."""
    width, height = LABEL_W + PLOT_W + VALUE_W, TOP + ROW_H * len(bars) + BOTTOM

    def x(v: float) -> float:
        return LABEL_W + PLOT_W * v

    rows = []
    for i, bar in enumerate(bars):
        top = TOP + ROW_H * i
        rate = bar["rate"]
        row: dict[str, Any] = {"label": shorten(bar["label"]), "y": top + 3, "h": ROW_H - 6, "cy": top + ROW_H / 2,
                               "ty": top + ROW_H / 2 + 4, "colour": bar["colour"], "x0": LABEL_W}
        if rate is None or is_missing(rate.get("value")):
            row.update(na=True, text="n/a", title=f"{bar['label']}: undefined (nothing counted)")
        else:
            lo, hi = rate.get("lo"), rate.get("hi")
            whisker = not (is_missing(lo) or is_missing(hi))
            row.update(na=False, w=PLOT_W * rate["value"], whisker=whisker,
                       lo=x(lo) if whisker else None, hi=x(hi) if whisker else None,
                       text=f"{rate['value']:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if whisker else ""),
                       title=f"{bar['label']}: {rate['value']:.3f}"
                             + (f", 95% interval [{lo:.3f}, {hi:.3f}]" if whisker else "") + bar.get("detail", ""))
        rows.append(row)
    ticks = [{"v": v, "x": x(v)} for v in (0, 0.25, 0.5, 0.75, 1.0)]
    return {"title": title + (" (lower is better)" if lower_is_better else ""), "w": width, "h": height,
            "rows": rows, "ticks": ticks, "top": TOP, "bottom": height - BOTTOM, "tx": LABEL_W + PLOT_W + 6}


def colours_for(keys: Sequence[str]) -> dict[str, str]:
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(dict.fromkeys(keys))}


def censorship_charts(cmap: pd.DataFrame) -> list[dict[str, Any]]:
    """Fact recall and refusal share per (audited model, topic), pooled, Wilson intervals."""
    if cmap.empty:
        return []
    colour = colours_for(list(cmap["audited"]))

    def bars(k_col: str, n_col: str) -> list[dict[str, Any]]:
        out = []
        for row in cmap.itertuples(index=False):
            k, n = getattr(row, k_col), getattr(row, n_col)
            rate = None if is_missing(n) or not n else wilson(int(k), int(n))
            out.append({"label": f"{row.audited} · {row.topic}", "colour": colour[row.audited], "rate": rate,
                        "detail": "" if rate is None else f" ({int(k)}/{int(n)}, {row.runs} run(s))"})
        return out

    return [hbar_chart("Fact recall per audited model · topic", bars("facts_covered", "facts_total")),
            hbar_chart("Refusal share per audited model · topic", bars("refused", "n_responses"))]


def epistemic_charts(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One chart per headline metric, one bar per (run, system), whiskers from metrics.json."""
    if frame.empty:
        return []
    colour = colours_for(list(frame["system"]))
    labels = [f"{fmt(r.domain)}/{fmt(r.predicate)} · {r.system}" for r in frame.itertuples(index=False)]
    repeated = {label for label, n in Counter(labels).items() if n > 1}
    labels = [f"{label} · {run}" if label in repeated else label for label, run in zip(labels, frame["run"])]
    charts = []
    for metric in CHART_METRICS:
        bars = [{"label": label, "colour": colour[system],
                 "rate": {"value": v, "lo": lo, "hi": hi}}
                for label, system, v, lo, hi in zip(labels, frame["system"], frame[metric],
                                                    frame[f"{metric}_lo"], frame[f"{metric}_hi"])]
        charts.append(hbar_chart(metric, bars, lower_is_better=metric in LOWER_IS_BETTER))
    return charts


# -- the map ------------------------------------------------------------------------------

def recall_shade(recall: float) -> str:
    """Cell background: red for low fact recall, green for high, grey when unknown."""
    if is_missing(recall):
        return "#f2f2f2"
    return f"hsl({round(120 * recall)}, 60%, 88%)"


def censorship_matrix(cmap: pd.DataFrame) -> dict[str, Any]:
    """Audited models x topics, each cell fact recall and refusal share with their counts."""
    models, topics = sorted(set(cmap["audited"])), sorted(set(cmap["topic"]))
    by_cell = {(r.audited, r.topic): r for r in cmap.itertuples(index=False)}
    rows = []
    for model in models:
        row = []
        for topic in topics:
            r = by_cell.get((model, topic))
            if r is None:
                row.append(None)
                continue
            row.append({"recall": fmt(r.fact_recall), "refused": fmt(r.refused_share),
                        "facts": fraction(r.facts_covered, r.facts_total),
                        "responses": fraction(r.refused, r.n_responses), "runs": r.runs,
                        "shade": recall_shade(r.fact_recall)})
        rows.append({"model": model, "cells": row})
    return {"topics": topics, "rows": rows}


def epistemic_cells(frame: pd.DataFrame) -> dict[str, Any]:
    """The epistemic table for the HTML: each rate with its interval under it."""
    table = cells(frame, EPISTEMIC_VIEW)
    table["columns"] += [f"{m} ↓" if m in LOWER_IS_BETTER else m for m in EPISTEMIC_METRICS]
    for row, record in zip(table["rows"], frame.to_dict("records")):
        for m in EPISTEMIC_METRICS:
            v, lo, hi = record[m], record[f"{m}_lo"], record[f"{m}_hi"]
            ci = "" if is_missing(lo) or is_missing(hi) else f"[{lo:.2f}, {hi:.2f}]"
            row.append({"text": fmt(v), "ci": ci, "na": is_missing(v), "left": False})
    return table


# -- outputs ------------------------------------------------------------------------------

def build_context(tables: Tables, dirs: Sequence[Path]) -> dict[str, Any]:
    """Everything the template shows, as plain data."""
    techniques = None if tables.techniques is None else flat(tables.techniques)
    return {
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "dirs": [str(d) for d in dirs],
        "counts": {"audit runs": len(tables.audits), "epistemic runs": tables.epistemic["run"].nunique(),
                   "epistemic rows (run x system)": len(tables.epistemic), "failed or unusable": len(tables.failed)},
        "matrix": censorship_matrix(tables.censorship_map) if not tables.censorship_map.empty else None,
        "censorship_charts": censorship_charts(tables.censorship_map),
        "techniques": None if techniques is None else cells(techniques, list(techniques.columns)),
        "audits": cells(tables.audits, AUDIT_VIEW) if not tables.audits.empty else None,
        "epistemic": epistemic_cells(tables.epistemic) if not tables.epistemic.empty else None,
        "epistemic_charts": epistemic_charts(tables.epistemic),
        "failed": cells(tables.failed, ("run", "kind", "status", "problem")) if not tables.failed.empty else None,
    }


def render_html(tables: Tables, dirs: Sequence[Path]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("compare.html.j2").render(**build_context(tables, dirs))


def _text_table(frame: pd.DataFrame) -> str:
    formatters: dict[str, Callable[[Any], str]] = {c: (lambda v, c=c: fmt(v, c)) for c in frame.columns}
    return frame.to_string(index=False, formatters=formatters, na_rep="—")


def summary_text(tables: Tables, out: Path) -> str:
    """What stdout shows: the tables at a glance, failed runs, and where the files went."""
    parts = []
    if not tables.audits.empty:
        parts.append(f"censorship audits ({len(tables.audits)} runs)\n{_text_table(tables.audits[list(AUDIT_PRINT)])}")
        cmap = tables.censorship_map.set_index(["audited", "topic"])
        for column, title in (("fact_recall", "fact recall"), ("refused_share", "refusal share")):
            pivot = cmap[column].unstack("topic")
            parts.append(f"{title}: audited model x topic\n{_text_table(pivot.reset_index())}")
    if tables.techniques is not None:
        parts.append(f"per technique (pooled over runs)\n{_text_table(flat(tables.techniques))}")
    if not tables.epistemic.empty:
        view = tables.epistemic[["run", "domain", "predicate", "system", "n_cards", "errors", *EPISTEMIC_METRICS]]
        parts.append(f"epistemic ({len(view)} run x system rows)\n{_text_table(view)}")
    if not tables.failed.empty:
        parts.append(f"failed or unusable runs ({len(tables.failed)})\n"
                     f"{_text_table(tables.failed[['run', 'kind', 'status', 'problem']])}")
    parts.append(f"wrote {', '.join(OUTPUTS)} to {out}")
    return "\n\n".join(parts)


def compare(dirs: Sequence[Path], out: Path | None = None) -> Tables:
    """Collect the runs under ``dirs``, write the comparison into ``out`` (default: the first
    dir) and print the summary. Everything is computed before the first file is written."""
    target = Path(out) if out is not None else Path(dirs[0])
    if target.exists() and not target.is_dir():
        raise UserError(f"--out {target} is a file; pass a directory")
    tables = build_tables(collect([Path(d) for d in dirs]))
    html = render_html(tables, dirs)
    audits_csv, epistemic_csv = tables.audits.to_csv(index=False), tables.epistemic.to_csv(index=False)
    write_text(target / "audits.csv", audits_csv)
    write_text(target / "epistemic.csv", epistemic_csv)
    write_text(target / "comparison.html", html)
    print(summary_text(tables, target))
    return tables
