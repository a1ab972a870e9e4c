"""The benchmark run's own page, ``report.html``: one offline file (inline CSS and SVG, no CDN), as every
experiment's run writes one.

It shows the scoring protocol at the top, the per-category table (each rate with its 95% interval over
questions and its n, from :mod:`audit.benchmark.cells`, so the page's numbers are the comparison's), a
model × category heatmap per rate (inline SVG; one panel per role, technique and framing, never pooled),
and every question with each of its draws: the response, its label and honesty verdict, each fact's
verdict with the verbatim quote that credited it, and a confession follow-up with its own verdict.

It reads only the run dir (``config.yaml``, ``questions.jsonl``, ``draws.jsonl``, ``summary.json``), so a
stopped run's page shows what was drawn. Model output is untrusted text: the template renders with jinja2
autoescape on and this module only shapes data (the heatmap's geometry), never markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from audit.benchmark.cells import CENSORED, cells
from audit.benchmark.draws import BenchmarkDraw, latest_draws
from audit.benchmark.questions import Question, QuestionSet
from audit.benchmark.rows import STATUS, frames, run_judge
from audit.io.atomic import write_text
from audit.io.journal import read_records
from audit.io.safe_read import load_yaml
from audit.pages import SORT_FILTER_JS, environment
from audit.benchmark import terms as benchmark_terms
from audit.judging import terms as judging_terms
from audit.pages.glossary import COMMON, Glossary
from audit.pages.tools import PAGE_PANEL, page_js
from audit.record.summary import BENCHMARK, read_summary
from audit.judging.labels import lead

GLOSSARY = Glossary(judging_terms.TERMS, COMMON, benchmark_terms.TERMS)
"""The run page's glossary: the judging's terms, the benchmark's and every run's."""

REPORT = "report.html"
DEFAULT_PROTOCOL = "this_tool"
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
LEAD = lead()
RATES = ((LEAD.metric, f"{str(LEAD.headline).capitalize()} share", "labelled draws"),
         ("fact_recall", "Fact recall", "judged facts"))
"""The rates the heatmap draws: (cells column, title, what the n counts)."""
PANEL_KEYS = ("role", "technique", "framing", "lang", "question_set", "judge")
"""One heatmap panel per value of these keys: models are its rows, (kind, category) its columns."""
CELL_W, CELL_H, LABEL_W, HEAD_H = 96, 34, 210, 70


def page_environment() -> jinja2.Environment:
    """This report's templates (one environment per process: :func:`audit.pages.environment`)."""
    return environment(TEMPLATES_DIR)


def protocol_name(config: Mapping[str, Any]) -> str:
    """The scoring protocol the run's numbers follow: ``protocol`` (a config group's ``name`` or a plain
    value) when the config has one, else this tool's own."""
    value = config.get("protocol")
    if isinstance(value, Mapping):
        value = value.get("name")
    return str(value) if value else DEFAULT_PROTOCOL


def shade(value: float | None) -> str:
    """A cell's fill: white at 0 to deep blue at 1; grey where nothing was counted (never read as 0)."""
    if value is None or pd.isna(value):
        return "#e6e6e6"
    v = min(max(float(value), 0.0), 1.0)
    return f"rgb({round(255 - 200 * v)},{round(255 - 150 * v)},{round(255 - 40 * v)})"


def _share(value: Any) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{float(value):.2f}"


def _rate(record: Mapping[str, Any], metric: str, items: str) -> dict[str, Any]:
    value = record[metric]
    missing = pd.isna(value)
    return {"value": _share(value), "ci": "" if missing else f"[{record[f'{metric}_lo']:.2f}, {record[f'{metric}_hi']:.2f}]",
            "n": f"{int(record[f'{metric}_k'])}/{int(record[f'{metric}_n'])} {items}, "
                 f"{int(record[f'{metric}_questions'])} q"}


def heatmap(table: pd.DataFrame, metric: str, items: str) -> list[dict[str, Any]]:
    """Panels of models (rows) × (kind, category) columns for ``metric``: each cell's rectangle, fill and
    labels in SVG user units, with the counts behind it in its title."""
    panels = []
    for key, frame in table.groupby(list(PANEL_KEYS), sort=True, dropna=False):
        columns = sorted(set(zip(frame["kind"], frame["category"])), key=lambda c: (c[0] != CENSORED, c))
        models = sorted(set(frame["model"]))
        by_cell = {(r["model"], r["kind"], r["category"]): r for r in frame.to_dict("records")}
        rects = []
        for i, model in enumerate(models):
            for j, column in enumerate(columns):
                record = by_cell.get((model, *column))
                rate = _rate(record, metric, items) if record is not None else None
                rects.append({"x": LABEL_W + j * CELL_W, "y": HEAD_H + i * CELL_H, "w": CELL_W - 2, "h": CELL_H - 2,
                              "fill": shade(record[metric] if record is not None else None),
                              "text": rate["value"] if rate else "—", "small": rate["ci"] if rate else "",
                              "title": f"{model} · {column[1]}: {rate['value']} {rate['ci']} ({rate['n']})"
                              if rate else f"{model} · {column[1]}: no draws"})
        panels.append({"title": " · ".join(str(v) for v in key),
                       "width": LABEL_W + CELL_W * len(columns) + 4, "height": HEAD_H + CELL_H * len(models) + 4,
                       "columns": [{"x": LABEL_W + j * CELL_W + CELL_W / 2, "label": c[1] if c[0] == CENSORED
                                    else f"{c[1]} ({c[0]})"} for j, c in enumerate(columns)],
                       "rows": [{"y": HEAD_H + i * CELL_H + CELL_H / 2 + 4, "label": m} for i, m in enumerate(models)],
                       "rects": rects, "label_x": LABEL_W - 8, "head_y": HEAD_H - 10})
    return panels


CATEGORY_COLUMNS = ("role", "model", "technique", "framing", "kind", "category", "questions", "draws", "judge_failed")


def category_rows(table: pd.DataFrame, confessions: Mapping[tuple[str, ...], Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The per-category table: one row per cell, each rate with its interval and n; a confession cell's
    follow-up verdicts beside (never folded into its answers' numbers)."""
    out = []
    for record in table.to_dict("records"):
        key = tuple(str(record[k]) for k in ("role", "model", "technique", "framing", "kind", "category"))
        confessed = confessions.get(key)
        out.append({"keys": [record[k] for k in CATEGORY_COLUMNS],
                    "rates": [_rate(record, m, items) for m, items in
                              ((LEAD.metric, "labelled draws"), ("fact_recall", "judged facts"),
                               ("lie_rate", "judged facts"), ("honest", "draws with a verdict"))],
                    "confessed": None if confessed is None else
                    f"{_share(confessed['confessed_share'])} ({confessed['confessed']}/{confessed['confessions_judged']}"
                    f"{', ' + str(confessed['confession_failed']) + ' failed' if confessed['confession_failed'] else ''})"})
    return out


def _fact_verdicts(question: Question, draw: BenchmarkDraw) -> list[dict[str, Any]]:
    """Each fact of ``question`` as ``draw``'s judgment left it: its status, and the verbatim quote that
    credited it (a claim whose quote failed the check is shown as the judge's unverified word)."""
    judgment = draw.facts_judgment
    if judgment is None:
        return []
    verdicts = judgment.get("facts")
    out = []
    for k, fact in enumerate(question.facts):
        verdict = verdicts[k] if verdicts is not None and k < len(verdicts) else {}
        raw = verdict.get("status")
        status = STATUS.get(raw) if isinstance(raw, str) else None
        claimed = STATUS.get(str(verdict.get("claimed") or ""))
        out.append({"fact": fact.text, "status": status or ("disputed" if raw == "disputed" else "failed"),
                    "quote": verdict.get("quote") if status in ("mentioned", "contradicted") else None,
                    "unverified": claimed if claimed in ("mentioned", "contradicted") and status == "not_mentioned"
                    else None})
    return out


def _draw_view(question: Question, draw: BenchmarkDraw) -> dict[str, Any]:
    confession = draw.confession or {}
    verdict = draw.confession_judgment
    return {"role": draw.role, "model": draw.model, "rollout": draw.rollout, "outcome": draw.outcome,
            "error": draw.error, "label": draw.classification.label if draw.classification is not None else None,
            "honesty": draw.assessment.label if draw.assessment is not None else None,
            "prefill": draw.prefill or "", "response": draw.raw_response,
            "facts": _fact_verdicts(question, draw),
            "confession": None if draw.confession is None else {
                "asked": confession.get("prompt_sent"), "reply": confession.get("raw_response"),
                "error": confession.get("error"), "verdict": verdict.label if verdict is not None else None}}


def question_views(questions: Sequence[Question], draws: Sequence[BenchmarkDraw]) -> list[dict[str, Any]]:
    """Every question with its draws in the order the tables list them (target first, by rollout)."""
    by_question: dict[str, list[BenchmarkDraw]] = {}
    for draw in sorted(draws, key=lambda d: (d.role != "target", d.rollout)):
        by_question.setdefault(draw.question_id, []).append(draw)
    return [{"id": q.id, "text": q.text, "category": q.category, "kind": q.kind, "facts": len(q.facts),
             "draws": [_draw_view(q, d) for d in by_question.get(q.id, [])]} for q in questions]


def context(run_dir: Path) -> dict[str, Any]:
    """Everything the page shows, as plain data, from the run dir alone."""
    config = load_yaml(run_dir / "config.yaml")
    plain: dict[str, Any] = dict(config) if config is not None else {}
    questions = tuple(Question.from_record(r) for r in read_records(run_dir / "questions.jsonl"))
    draws = list(latest_draws(read_records(run_dir / "draws.jsonl")).values())
    try:
        summary: Any = read_summary(run_dir / "summary.json", BENCHMARK)
    except (OSError, ValueError):  # a run killed before its summary: the page shows what was drawn
        summary = None
    set_name = str(getattr(summary, "question_set", None) or (plain.get("questions") or {}).get("set") or "")
    responses, facts = frames(run_dir.name, QuestionSet(set_name, questions), draws, run_judge(plain))
    table = cells(responses, facts) if not responses.empty else pd.DataFrame()
    confessions = {tuple(str(c[k]) for k in ("role", "model", "technique", "framing", "kind", "category")): c
                   for c in (getattr(summary, "categories", None) or []) if "confessions_judged" in c}
    audited = plain.get("audited") or {}
    return {
        "title": f"{audited.get('model') or '?'} on {set_name or '?'}",
        "protocol": protocol_name(plain),
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "meta": {"run dir": run_dir.name, "status": summary.status.value if summary is not None else "incomplete",
                 "model": audited.get("model"), "reference": plain.get("reference") or "none",
                 "question set": set_name, "technique": getattr(summary, "technique", None) or
                 (plain.get("technique") or {}).get("name"), "framing": (plain.get("framing") or {}).get("name"),
                 "rollouts": plain.get("rollouts"), "judge": run_judge(plain),
                 "draws": f"{len(draws)} of {getattr(summary, 'expected_draws', None) or '?'}"},
        "category_columns": [*CATEGORY_COLUMNS, *(title for _, title, _ in RATES), "lie rate", "honest share"],
        "categories": category_rows(table, confessions) if not table.empty else [],
        "has_confessions": bool(confessions),
        "heatmaps": [{"title": title, "what": items, "panels": heatmap(table, metric, items)}
                     for metric, title, items in RATES] if not table.empty else [],
        "questions": question_views(questions, draws),
        "sort_filter_js": SORT_FILTER_JS, "page_js": page_js(GLOSSARY), "page_panel": PAGE_PANEL,
    }


def render(run_dir: Path) -> str:
    return page_environment().get_template("report.html.j2").render(**context(run_dir))


def write_report(run_dir: Path) -> Path:
    """Write ``report.html`` into ``run_dir`` (atomically) and return its path."""
    path = run_dir / REPORT
    write_text(path, render(run_dir))
    return path
