"""The run index: every run under some directories, one row each, as text or as an HTML page.

Pure shaping (:func:`index_rows`, :func:`text_table`) apart from the page (:func:`write_index`,
jinja2 with autoescape on: topic names, model ids and error messages are untrusted text). The
page is one self-contained file (inline CSS and the shared sort/filter script of
:mod:`audit.pages`, no CDN); links to each run's report and its sweep's comparison are relative,
so the page and the runs can move together.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import jinja2

from audit.io.atomic import write_text
from audit.pages import SORT_FILTER_JS, environment
from audit.benchmark import terms as benchmark_terms
from audit.censorship import terms as censorship_terms
from audit.epistemic import terms as epistemic_terms
from audit.judging import terms as judging_terms
from audit.pages.glossary import COMMON, Glossary
from audit.pages.tools import PAGE_PANEL, page_js
from audit.judging.counting import headline, run_unknown_labels
from audit.record.run_record import RunRecord
from audit.record.summary import BenchmarkSummary, CensorshipSummary
from audit.judging.labels import lead
from audit.pages.links import relative_href

GLOSSARY = Glossary(judging_terms.TERMS, censorship_terms.TERMS, COMMON, benchmark_terms.TERMS, epistemic_terms.TERMS)
"""The index's glossary: it lists runs of every experiment."""

COLUMNS = ("experiment", "status", "date", "models", "subject", "technique", "repeat", "cost", "headline", "path")
PAGE = "runs.html"
REPORT, COMPARISON = "report.html", "comparison.html"


@dataclass(frozen=True)
class IndexRow:
    """One run as the index shows it."""

    experiment: str
    status: str
    date: str
    models: str
    subject: str
    technique: str
    repeat: int | None
    cost: float | None
    headline: str
    path: Path
    problem: str | None
    report: Path | None
    comparison: Path | None


def headline_text(record: RunRecord) -> str:
    """The run's headline figures in a few words (``—`` when it has none)."""
    summary = record.summary
    if summary is None or record.stub:
        return _short(record.problem) if record.problem else "—"
    if isinstance(summary, CensorshipSummary):
        unknown = run_unknown_labels(summary)
        if unknown:  # no share from a label the vocabulary lacks (audit.judging.counting): say so instead
            return _short("no figures: unknown label " + ", ".join(f"{k!r} ({n})" for k, n in unknown.items()))
        figures = headline(summary)
        parts = [f"{figures['iterations']} it"]
        share = figures.get(lead().name)  # the lead headline share (judging/labels.yaml)
        if share is not None:
            parts.append(f"{lead().name} {share:.2f}")
        if figures.get("unlabelled"):
            parts.append(f"{figures['unlabelled']} unlabelled")
        if figures.get("fact_recall") is not None:
            parts.append(f"facts {figures['fact_recall']:.2f}")
        return ", ".join(parts)
    if isinstance(summary, BenchmarkSummary):
        return ", ".join(f"{name} {_rate(value)}" for name, value in benchmark_headline(summary).items()) or "—"
    shown = [f"{system} AP {_rate(rates.get('AP'))} acc {_rate(rates.get('accuracy'))}"
             for system, rates in summary.headline().items()]
    return "; ".join(shown) or "—"


def benchmark_headline(summary: BenchmarkSummary) -> dict[str, float]:
    """The target's lead headline share (refused / judged draws, ``judging/labels.yaml``) per question
    kind, censored apart from control: what the index shows of a benchmark run."""
    name = lead().name
    out: dict[str, float] = {}
    for kind in ("censored", "control"):
        cells = [c for c in summary.categories if c.get("role") == "target" and c.get("kind") == kind]
        judged = sum(int(c.get("judged") or 0) for c in cells)
        # a row written under another name of the label (the vocabulary renamed it since) has no
        # count of it: no figure, never a 0
        if judged and all(name in c for c in cells):
            out[f"{kind} {name}"] = round(sum(int(c.get(name) or 0) for c in cells) / judged, 4)
    return out


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _rate(value: object) -> str:
    return "n/a" if not isinstance(value, (int, float)) else f"{value:.2f}"


def _comparison_of(path: Path) -> Path | None:
    """The comparison.html nearest above a run (its sweep's), if one was written."""
    for parent in path.parents:
        if (parent / COMPARISON).is_file():
            return parent / COMPARISON
        if (parent / "multirun.yaml").is_file():
            return None
    return None


def _date(started_at: str | None) -> str:
    """``2026-11-23 10:00`` (UTC) from a summary's ``started_at``; empty when it has none."""
    if not started_at:
        return ""
    try:
        return datetime.fromisoformat(started_at.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return started_at


def _shown(path: Path) -> Path:
    """A run's path as the user would type it: relative to the working directory when under it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def index_rows(records: Iterable[RunRecord]) -> list[IndexRow]:
    rows = []
    for record in records:
        summary = record.summary
        state = record.state
        if summary is not None and summary.stop_reason:
            state = f"{state} ({summary.stop_reason.replace('_', ' ')})"
        if summary is not None and summary.failed_calls:
            state += f", {summary.failed_calls} failed call(s)"
        rows.append(IndexRow(
            experiment=record.experiment + (" (job stub)" if record.stub else ""),
            status=state,
            date=_date(summary.started_at) if summary is not None else "",
            models=", ".join(summary.models) if summary is not None else "",
            subject=summary.subject if summary is not None else "",
            technique=(summary.technique or "") if isinstance(summary, (CensorshipSummary, BenchmarkSummary)) else "",
            repeat=summary.repeat if summary is not None else None,
            cost=summary.usage.cost if summary is not None and summary.usage is not None else None,
            headline=headline_text(record),
            path=_shown(record.path),
            problem=record.problem,
            report=record.path / REPORT if (record.path / REPORT).is_file() else None,
            comparison=_comparison_of(record.path),
        ))
    return rows


def _cells(row: IndexRow) -> list[str]:
    cost = "—" if row.cost is None else f"${row.cost:.4f}"
    repeat = "—" if row.repeat is None else str(row.repeat)
    return [row.experiment, row.status, row.date or "—", row.models or "—", row.subject or "—", row.technique or "—",
            repeat, cost, row.headline, str(row.path)]


def text_table(rows: Sequence[IndexRow]) -> str:
    """The index as aligned text columns (the last column, the path, is not padded)."""
    table = [list(COLUMNS), *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS) - 1)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(line, widths)), line[-1]]) for line in table)


def _link(target: Path | None, page_dir: Path) -> str | None:
    return None if target is None else relative_href(target, page_dir)


def beside_runs(roots: Sequence[Path]) -> Path:
    """Where the index page goes when no file is named: beside the runs it lists, inside the one
    directory given, or in the nearest directory that holds all of them (never wherever the
    command happened to be started, unless that is where the runs are)."""
    resolved = [r.resolve() for r in roots]
    common = Path(os.path.commonpath(resolved)) if resolved else Path.cwd()
    return common / PAGE


def page_environment() -> jinja2.Environment:
    """The index page's templates (one environment per process: :func:`audit.pages.environment`)."""
    return environment(Path(__file__).resolve().parent / "templates")


def write_index(rows: Sequence[IndexRow], out: Path, roots: Sequence[Path]) -> Path:
    """Write the index page to ``out`` (atomically) and return it."""
    env = page_environment()
    page_dir = out.parent
    shown = [{"cells": _cells(row), "problem": row.problem, "report": _link(row.report, page_dir),
              "comparison": _link(row.comparison, page_dir), "path": _link(row.path, page_dir)} for row in rows]
    html = env.get_template("index.html.j2").render(
        rows=shown, columns=COLUMNS, roots=[str(r) for r in roots],
        written=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), sort_filter_js=SORT_FILTER_JS,
        page_js=page_js(GLOSSARY), page_panel=PAGE_PANEL)
    return write_text(out, html)
