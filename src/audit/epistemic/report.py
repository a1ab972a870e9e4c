"""The HTML report: an offline file (inline CSS, SVG and script, no CDN), and its cards beside it.

Cards past the first :data:`INLINE_CARDS` are written beside the page, :data:`CHUNK_CARDS` to a
file (``report_cards/0000.js``), and loaded when the reader asks for more: the one paging method
of every report (:mod:`audit.pages.paging`), each card drawn by one macro (``templates/card.html.j2``)
whether it is in the page or in a file. A 100,000-card page was 93 MB of HTML that headless
Chromium took 139 s to load; paged, it opens in about a second (``bench/bench_report_pages.py``).

Model output is untrusted text, so the template renders with jinja2 autoescape on; this
module only shapes data (chart geometry, drill-down rows) and never builds markup itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from audit.cli import ArgParser
from audit.epistemic.jsonl import read_jsonl
from audit.epistemic.metrics import LABELS, PREDS, answers_of, units
from audit.epistemic.rates import CHARTED_RATES, HEADLINE_RATES, LOWER_IS_BETTER, RATE_NAMES, RATES
from audit.errors import UserError, exit_on_user_error
from audit.record.answers import IN_CONTEXT, Answer, Card, Metrics, SystemMetrics, cards_by_id, typed
from audit.llm import embedded
from audit.stats.intervals import PALETTE
from audit.io.atomic import write_texts
from audit.io.safe_read import read_json
from audit.pages import SORT_FILTER_JS, environment
from audit.pages.paging import MORE_JS, Paged, page_entries
from audit.epistemic import terms as epistemic_terms
from audit.pages.glossary import COMMON, Glossary
from audit.pages.tools import PAGE_PANEL, page_js

GLOSSARY = Glossary(COMMON, epistemic_terms.TERMS)
"""The run page's glossary: the experiment's rates and every run's terms."""

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
# Systems whose YES is gated by the licenser (their blocked answers are the licenser's verdicts).
GATED = ("graph_rag",)

INLINE_CARDS = 200
"""Cards rendered as HTML in the page; the rest wait in files beside it until the reader asks."""
CHUNK_CARDS = 1000
"""Cards per file beside the page, one file loaded per click of "more cards"."""
CARDS_DIR = "report_cards"
"""The folder beside the page that holds the cards past the first ones."""

CHART_W, CHART_H, MARGIN_L, MARGIN_B, MARGIN_T = 300, 170, 34, 20, 12


def fmt_rate(rate: Mapping[str, Any] | None, digits: int = 3) -> str:
    """'0.750' for a rate, '—' when undefined (zero denominator)."""
    return "—" if rate is None else f"{rate['value']:.{digits}f}"


def fmt_interval(rate: Mapping[str, Any] | None) -> str:
    """'[0.41, 0.93] k/n' for a rate, '' when undefined."""
    return "" if rate is None else f"[{rate['lo']:.2f}, {rate['hi']:.2f}] {rate['k']}/{rate['n']}"


def bar_chart(metric: str, per_system: Mapping[str, Mapping[str, Any] | None], colours: Mapping[str, str]) -> dict[str, Any]:
    """Geometry of one bar chart (one bar per system, Wilson whisker), in SVG user units.

    Undefined rates get no bar but a 'n/a' mark, so a missing bar is never read as 0.
    """
    plot_w, plot_h = CHART_W - MARGIN_L - 8, CHART_H - MARGIN_B - MARGIN_T
    slot = plot_w / max(1, len(per_system))
    bar_w = min(40.0, slot * 0.6)

    def y(v: float) -> float:
        return MARGIN_T + plot_h * (1 - v)

    bars = []
    for i, (system, rate) in enumerate(per_system.items()):
        x = MARGIN_L + slot * i + (slot - bar_w) / 2
        bar: dict[str, Any] = {"system": system, "x": x, "w": bar_w, "cx": x + bar_w / 2,
                               "colour": colours[system], "label": fmt_rate(rate, 2)}
        if rate is not None:
            bar.update(y=y(rate["value"]), h=plot_h * rate["value"], lo=y(rate["lo"]), hi=y(rate["hi"]),
                       title=f"{system}: {metric} = {fmt_rate(rate)} {fmt_interval(rate)}")
        else:
            bar.update(y=None, title=f"{system}: {metric} undefined (zero denominator)")
        bars.append(bar)
    ticks = [{"v": v, "y": y(v)} for v in (0, 0.25, 0.5, 0.75, 1.0)]
    return {"metric": metric, "lower_is_better": metric in LOWER_IS_BETTER, "bars": bars, "ticks": ticks,
            "w": CHART_W, "h": CHART_H, "x0": MARGIN_L, "x1": CHART_W - 8, "y0": y(0)}


def drilldown(answers: Sequence[Answer], cards: Mapping[str, Card], systems: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per card: the card (if known) and every system's answer; cards some system
    got wrong (or errored on) first, since those are what a reader opens."""
    by_id: dict[str, dict[str, Any]] = {}
    for answer in answers:
        entry = by_id.setdefault(answer.id, {"id": answer.id, "gold": answer.gold, "label": answer.label,
                                             "suite": answer.suite, "answers": {}})
        entry["answers"][answer.system] = answer
    out = []
    for entry in by_id.values():
        entry["card"] = cards.get(entry["id"])
        entry["ordered"] = [(s, entry["answers"].get(s)) for s in systems]
        entry["wrong"] = any(a is not None and not a.passed for _, a in entry["ordered"])
        out.append(entry)
    out.sort(key=lambda e: (not e["wrong"], e["id"]))
    return out


def typed_inputs(metrics: Metrics | Mapping[str, Any], rows: Sequence[Answer | Mapping[str, Any]],
                 cards: Mapping[str, Card | Mapping[str, Any]]) -> tuple[Metrics, list[Answer], dict[str, Card]]:
    """The page's inputs as records (saved ones typed here, upgraded from every earlier shape): an
    answer saved without its card's fields (the original project's rows) takes them from its card."""
    try:
        known = {str(key): c if isinstance(c, Card) else typed(Card, c, f"card {key!r}") for key, c in cards.items()}
    except ValueError as exc:
        raise UserError(f"{exc}; give the cards.jsonl a run wrote (or none: the page then shows no card text)") from None
    answers = answers_of(rows, known)
    return metrics if isinstance(metrics, Metrics) else Metrics.read(metrics), answers, known


def build_context(metrics: Metrics | Mapping[str, Any], rows: Sequence[Answer | Mapping[str, Any]],
                  cards: Mapping[str, Card | Mapping[str, Any]], meta: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, as plain data (the cards drawn already, paged)."""
    figures, answers, known = typed_inputs(metrics, rows, cards)
    by_system: dict[str, SystemMetrics] = dict(figures.items())
    systems = list(by_system)
    shown = units(figures)  # the metrics tables and charts: per condition when a system was asked several
    colours = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate([*systems, *(u for u in shown if u not in by_system)])}
    suites = sorted({name for m in shown.values() for name in m.suites})
    mappings = sorted({str(m.mapping) for m in by_system.values()})
    return {
        "sort_filter_js": SORT_FILTER_JS, "page_js": page_js(GLOSSARY), "page_panel": PAGE_PANEL,
        "meta": dict(meta),
        "mapping": ", ".join(mappings),
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "systems": list(shown),
        "colours": colours,
        "metrics": shown,
        "rate_names": RATE_NAMES,
        "lower_is_better": LOWER_IS_BETTER,
        "charts": [bar_chart(name, {u: m.rate(name) for u, m in shown.items()}, colours) for name in CHARTED_RATES],
        "labels": LABELS,
        "preds": PREDS,
        "suites": suites,
        "suite_columns": HEADLINE_RATES,
        **_cards_context(drilldown(answers, known, systems)),
        "more_js": Markup(MORE_JS), "box": "cards", "noun": "cards",
        "u_kinds": any(m.u_kinds for m in shown.values()),
        "conditions": any(len(m.conditions) > 1 or IN_CONTEXT not in (m.conditions or {IN_CONTEXT: 0})
                          for m in by_system.values()),
        "glossary": [r.gloss() for r in RATES],
        "gated": [s for s in systems if s.split(":")[0] in GATED],
        "embedded_systems": embedded_systems(systems), "embedded_model": embedded.MODEL,
    }


def embedded_systems(systems: Sequence[str]) -> list[str]:
    """The systems that ran on the embedded 135M model (``local=``; a system's name carries its
    model, ``raw_llm:<model>``): a reader must know their numbers test the pipeline, not a model.
    Read from the names, so a report rebuilt from a run's files says it too."""
    return [s for s in systems if s.partition(":")[2] == embedded.MODEL]


def _cards_context(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Every card drawn by the one card macro, the first :data:`INLINE_CARDS` for the page and the
    rest in chunks for the files beside it."""
    card = page_environment().get_template("card.html.j2").module.card  # type: ignore[attr-defined]
    paged = page_entries([card(e) for e in entries], shown=INLINE_CARDS, chunk=CHUNK_CARDS, folder=CARDS_DIR)
    return {"paged": paged, "n_cards": len(entries)}


def page_environment() -> jinja2.Environment:
    """This report's templates (one environment per process: :func:`audit.pages.environment`)."""
    return environment(TEMPLATES_DIR, filters={"rate": fmt_rate, "interval": fmt_interval})


def render_report(metrics: Metrics | Mapping[str, Any], rows: Sequence[Answer | Mapping[str, Any]],
                  cards: Mapping[str, Card | Mapping[str, Any]] | None = None,
                  meta: Mapping[str, Any] | None = None) -> str:
    """The page as an HTML string (``metrics`` from :func:`compute_metrics` on ``rows``); the cards
    past :data:`INLINE_CARDS` are not in it but in the files :func:`write_report` writes beside it."""
    return page_environment().get_template("report.html.j2").render(**build_context(metrics, rows, cards or {}, meta or {}))


def write_report(path: Path, metrics: Metrics | Mapping[str, Any], rows: Sequence[Answer | Mapping[str, Any]],
                 cards: Mapping[str, Card | Mapping[str, Any]] | None = None,
                 meta: Mapping[str, Any] | None = None) -> Path:
    """Write the page and its card chunks as one set (:func:`audit.io.atomic.write_texts`)."""
    context = build_context(metrics, rows, cards or {}, meta or {})
    paged: Paged = context["paged"]
    write_texts({path: page_environment().get_template("report.html.j2").render(**context), **paged.files(path)})
    return path


def rebuild(run_dir: Path) -> Path:
    """Write a finished run's report again from its own files (metrics, results, cards, summary),
    e.g. after a change of this page; no model is called and no other file is touched."""
    fix = "give the directory of a finished epistemic run (it holds metrics.json and results.jsonl)"
    if not (run_dir / "metrics.json").is_file():
        raise UserError(f"{run_dir} has no metrics.json; {fix}")
    try:
        metrics = Metrics.read(read_json(run_dir / "metrics.json", fix=fix))
        cards_path = run_dir / "cards.jsonl"
        cards = cards_by_id(c for _, c in read_jsonl(cards_path, "cards", fix)) if cards_path.is_file() else {}
    except ValueError as exc:
        raise UserError(f"{run_dir}: {exc}; {fix}") from None
    rows = [row for _, row in read_jsonl(run_dir / "results.jsonl", "results", fix)]
    summary_path = run_dir / "summary.json"
    summary = read_json(summary_path, fix=fix) if summary_path.is_file() else {}
    meta = {k: summary[k] for k in ("domain", "predicate", "cards") if k in summary}
    return write_report(run_dir / "report.html", metrics, rows, cards, meta)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m audit.epistemic.report RUN_DIR``: (re)write an epistemic run's report."""
    parser = ArgParser(
        prog="python -m audit.epistemic.report",
        description="Rewrite an epistemic run's report.html from the files the run saved (no model call). "
                    "A run writes its report itself; this is for rebuilding one.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="an epistemic run dir (outputs/epistemic/...)")
    print(rebuild(parser.parse_args(argv).run_dir))


if __name__ == "__main__":
    exit_on_user_error(main)
