"""Print and write a judge check: ``judge_check.csv`` (one row per label), ``judge_check_items.csv``
(one row per response), ``judge_check.json`` (everything, with the judge's settings) and
``judge_check.html`` (offline, jinja2 with autoescape: responses and rationales are untrusted text).
Every file goes through the one atomic writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from audit.counted import counted
from audit.io.atomic import write_json, write_text
from audit.io.table import write_csv
from audit.judge_check.labels import Labelled
from audit.pages import environment
from audit.censorship import terms as censorship_terms
from audit.judging import terms as judging_terms
from audit.pages.glossary import COMMON, Glossary
from audit.pages.tools import PAGE_PANEL, page_js

GLOSSARY = Glossary(judging_terms.TERMS, censorship_terms.TERMS, COMMON)
"""The check's glossary: the judging's terms (labels, agreement) and the facts' (censorship)."""

OUTPUTS = ("judge_check.csv", "judge_check_items.csv", "judge_check.json", "judge_check.html")


def _interval(rate: Mapping[str, Any] | None) -> str:
    if rate is None:
        return "n/a"
    return f"{rate['value']:.2f} [{rate['lo']:.2f}, {rate['hi']:.2f}] ({rate['k']}/{rate['n']})"


def per_label_table(metrics: Mapping[str, Any]) -> pd.DataFrame:
    """One row per label: counts, precision and recall with their intervals and n."""
    records = []
    for label, entry in metrics["per_label"].items():
        record: dict[str, Any] = {"label": label, "human": entry["human"], "judge": entry["judge"]}
        for name in ("precision", "recall"):
            rate = entry[name] or {}
            record.update({name: rate.get("value"), f"{name}_lo": rate.get("lo"), f"{name}_hi": rate.get("hi"),
                           f"{name}_k": rate.get("k"), f"{name}_n": rate.get("n"),
                           f"{name}_unit": rate.get("unit")})
        records.append(record)
    return pd.DataFrame.from_records(records)


def item_records(rows: Sequence[Labelled], results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One record per response: the two labels, whether they agree, and the judge's error if it
    failed (a failed label stays None: through a DataFrame it would come back as NaN, not JSON)."""
    return [{"id": r.id, "run": r.run, "topic": r.topic, "human_label": r.label, "judge_label": res["label"],
             "agree": None if res["label"] is None else res["label"] == r.label, "judge_error": res.get("error") or ""}
            for r, res in zip(rows, results)]


def _undefined(kappa: Mapping[str, Any]) -> str | None:
    """Why a kappa has no value (None when it has one): nothing judged, or chance agreement is
    1 (both sides gave every item one and the same label), where kappa is 0/0, not a number."""
    if kappa["value"] == kappa["value"]:
        return None
    return "no response both labelled" if not kappa["n"] else \
        "undefined: both gave every response one and the same label"


def _kappa_text(kappa: Mapping[str, Any]) -> str:
    """A kappa for the terminal: its value and interval, or ``n/a (why)`` for an undefined one."""
    reason = _undefined(kappa)
    if reason:
        return f"n/a ({reason})"
    interval = f"(no interval: {kappa.get('note') or 'too few responses'})" if kappa["lo"] is None \
        else f"[{kappa['lo']:.2f}, {kappa['hi']:.2f}]"
    return f"{kappa['value']:.2f} {interval}"


def json_kappa(kappa: Mapping[str, Any]) -> dict[str, Any]:
    """A kappa as strict JSON holds it: an undefined value is ``null`` with ``value_reason``
    saying why (a bare NaN is not JSON; strict readers such as ``jq`` or JavaScript reject it)."""
    reason = _undefined(kappa)
    return {**kappa, "value": None, "value_reason": reason} if reason else dict(kappa)


def _json_safe(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics`` with each kappa (the overall one and each panel member's) as :func:`json_kappa` writes it."""
    safe = {**metrics, "kappa": json_kappa(metrics["kappa"])}
    if metrics.get("members"):
        safe["members"] = {name: json_kappa(k) for name, k in metrics["members"].items()}
    return safe


def summary_lines(metrics: Mapping[str, Any], judge: Mapping[str, Any]) -> list[str]:
    """What the terminal shows: n, failures, kappa and accuracy, then precision and recall per label."""
    kappa = metrics["kappa"]
    lines = [f"judge {judge.get('model')}: {counted(metrics['responses'], 'labelled response')}, "
             f"{metrics['judged']} judged, {counted(metrics['failed'], 'judge failure')} (left out of every rate)",
             f"Cohen's kappa vs your labels: {_kappa_text(kappa)}, n={kappa['n']}; {kappa['method']}",
             f"accuracy: {_interval(metrics['accuracy'])}",
             f"{'label':<14} {'human':>5} {'judge':>5}  {'precision [95%] (k/n)':<28} recall [95%] (k/n)"]
    for label, entry in metrics["per_label"].items():
        lines.append(f"{label:<14} {entry['human']:>5} {entry['judge']:>5}  {_interval(entry['precision']):<28} "
                     f"{_interval(entry['recall'])}")
    units = {rate["method"] for e in metrics["per_label"].values() for rate in (e["precision"], e["recall"]) if rate}
    lines += [f"precision/recall intervals: {u}" for u in sorted(units)]
    return lines


def page_environment() -> jinja2.Environment:
    """This report's templates (one environment per process: :func:`audit.pages.environment`)."""
    return environment(Path(__file__).resolve().parent / "templates")  # responses and rationales: untrusted


def fact_lines(facts: Mapping[str, Any]) -> list[str]:
    """The key-fact verdicts' figures, as :func:`summary_lines` gives the labels'."""
    lines = summary_lines(facts, {"model": "on the key facts"})
    return ["key-fact verdicts (each labelled fact of each response; a response's facts are judged "
            "together, so the response is the interval's unit):",
            f"{counted(facts['responses'], 'labelled verdict')}, {facts['judged']} judged, "
            f"{counted(facts['failed'], 'failed verdict')} (left out of every rate)", *lines[1:]]


def member_lines(members: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A panel's members, each against your labels (kappa, interval, n)."""
    lines = []
    for name, k in members.items():
        reason = _undefined(k)
        value = f"n/a ({reason})" if reason else f"{k['value']:.2f}"
        interval = "" if reason or k["lo"] is None else f" [{k['lo']:.2f}, {k['hi']:.2f}]"
        lines.append(f"  member {name}: kappa vs your labels {value}{interval}, n={k['n']} ({k['missing']} without "
                     "a label of its own)")
    return lines


def write_outputs(out: Path, labels: Path, judge: Mapping[str, Any], rows: Sequence[Labelled],
                  results: Sequence[Mapping[str, Any]], metrics: Mapping[str, Any],
                  facts: Mapping[str, Any] | None = None, fact_items: Sequence[Mapping[str, Any]] = ()) -> None:
    """Write the files into ``out`` and print the summary; with labelled key facts also
    ``judge_check_facts.csv`` (one row per verdict) and ``judge_check_fact_items.csv``."""
    settings = dict(judge) if "members" in judge else \
        {k: judge.get(k) for k in ("model", "endpoint", "temperature", "max_tokens", "structured_output")}
    lines = [*summary_lines(metrics, judge), *member_lines(metrics.get("members") or {}),
             *(fact_lines(facts) if facts else [])]
    write_csv(out / "judge_check.csv", per_label_table(metrics))
    items = item_records(rows, results)
    write_csv(out / "judge_check_items.csv", pd.DataFrame.from_records(items))
    written = list(OUTPUTS)
    if facts:
        write_csv(out / "judge_check_facts.csv", per_label_table(facts))
        write_csv(out / "judge_check_fact_items.csv", pd.DataFrame.from_records(
            [{k: v for k, v in i.items() if k != "cluster"} for i in fact_items]))
        written += ["judge_check_facts.csv", "judge_check_fact_items.csv"]
    write_json(out / "judge_check.json", {"labels": str(labels), "judge": settings, **_json_safe(metrics),
                                          "items": items,
                                          "facts": _json_safe(facts) if facts else None, "fact_items": list(fact_items)})
    html = page_environment().get_template("judge_check.html.j2").render(
        labels=str(labels), judge=settings, metrics=metrics, lines=lines, facts=facts,
        items=[{**item, "response": r.response, "rationale": res.get("rationale", "")}
               for item, r, res in zip(items, rows, results)], page_js=page_js(GLOSSARY), page_panel=PAGE_PANEL)
    write_text(out / "judge_check.html", html)
    print("\n".join(lines), flush=True)
    print(f"wrote {', '.join(written)} in {out}", flush=True)
