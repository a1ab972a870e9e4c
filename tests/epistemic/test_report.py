"""The report renders every part, escapes untrusted text, and needs nothing online."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from audit.epistemic.metrics import compute_metrics
from audit.epistemic.report import bar_chart, rebuild, render_report, write_report
from audit.errors import UserError

EVIL = "<script>alert('x')</script>"


def rows_and_cards():
    cards = {
        "E1": {"id": "E1", "facts": [f"River {EVIL} has mouth Lake."], "question": "Is Lake the mouth of River?",
               "gold": "YES", "label": "E", "claim": {"subj": "ex:R", "pred": "ex:hasMouth", "obj": "ex:L"},
               "reason": "entailed: triple in KG", "suite": "standard"},
        "C1": {"id": "C1", "facts": ["River has mouth Lake."], "question": "Is Sea the mouth of River?",
               "gold": "NO", "label": "C", "claim": {"subj": "ex:R", "pred": "ex:hasMouth", "obj": "ex:S"},
               "reason": "sh:maxCount 1", "suite": "near_miss"},
    }
    rows = [
        {"id": "E1", "gold": "YES", "pred": "YES", "pass": True, "system": "kg_oracle", "label": "E",
         "suite": "standard", "raw_output": None, "reason": "entailed: triple in KG", "error": None},
        {"id": "C1", "gold": "NO", "pred": "NO", "pass": True, "system": "kg_oracle", "label": "C",
         "suite": "near_miss", "raw_output": None, "reason": "sh:maxCount 1", "error": None},
        {"id": "E1", "gold": "YES", "pred": "UNKNOWN", "pass": False, "system": "raw_llm:m", "label": "E",
         "suite": "standard", "raw_output": f'{{"answer": "UNKNOWN"}} {EVIL}', "reason": "m answered UNKNOWN",
         "error": None, "retrieved": [f"Fact {EVIL}"]},
        {"id": "C1", "gold": "NO", "pred": None, "pass": False, "system": "raw_llm:m", "label": "C",
         "suite": "near_miss", "raw_output": None, "reason": "model call failed", "error": "server: 500 boom"},
    ]
    return rows, cards


def test_report_renders_all_sections_and_escapes(tmp_path):
    rows, cards = rows_and_cards()
    metrics = compute_metrics(rows)
    html = render_report(metrics, rows, cards, meta={"domain": "rivers", "note": EVIL})
    assert html.lower().count("<script") == 1 and "alert(" not in html.split("<script>")[1]  # only our sort/filter script
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert html.count("<svg") == 7 and "<details>" in html
    for text in ("kg_oracle", "raw_llm:m", "server: 500 boom", "sh:maxCount 1", "near_miss", "pred \\ gold"):
        assert text in html, text
    assert not re.search(r"""(src|href)=["']?https?:""", html)  # self-contained: nothing fetched
    path = write_report(tmp_path / "r.html", metrics, rows)
    assert "Card text not available" in path.read_text()


def test_wrong_cards_first_and_undefined_rates_shown_as_missing():
    rows, cards = rows_and_cards()
    rows = [r for r in rows if r["system"] == "kg_oracle"] + [
        {"id": "Z9", "gold": "YES", "pred": "NO", "pass": False, "system": "kg_oracle", "label": "E"}]
    html = render_report(compute_metrics(rows), rows, cards)
    assert html.index("<b>Z9</b>") < html.index("<b>C1</b>") < html.index("<b>E1</b>")


def test_bar_chart_geometry():
    rate = {"value": 0.5, "lo": 0.25, "hi": 0.75, "k": 1, "n": 2}
    chart = bar_chart("AP", {"a": rate, "b": None}, {"a": "#000", "b": "#fff"})
    a, b = chart["bars"]
    assert a["lo"] > a["y"] > a["hi"]  # SVG y grows downwards
    assert abs((chart["y0"] - a["y"]) - a["h"]) < 1e-9
    assert b["y"] is None and b["label"] == "—" and "undefined" in b["title"]
    assert bar_chart("FAR_NE", {"a": rate}, {"a": "#000"})["lower_is_better"]


def test_a_run_on_the_embedded_model_says_its_numbers_are_not_findings():
    """As the audit report does for local=true: a system that ran on the embedded 135M model
    (its name carries the model, raw_llm:<model>) gets the "not findings" banner; others none."""
    from audit.llm.embedded import MODEL

    rows, cards = rows_and_cards()
    assert "not findings" not in render_report(compute_metrics(rows), rows, cards)
    local = [{**r, "system": f"raw_llm:{MODEL}"} if r["system"] == "raw_llm:m" else r for r in rows]
    html = render_report(compute_metrics(local), local, cards)
    assert f"The system raw_llm:{MODEL} here is the embedded 135M model ({MODEL})." in html
    assert "its numbers are not findings about any model" in html


def test_an_original_row_is_drawn_with_its_cards_label_and_suite():
    """The original project's rows (id, gold, pred, system) are typed on read (audit.record.answers):
    the drill-down takes their label and suite from their card, where it used to print "(None)"."""
    rows, cards = rows_and_cards()
    bare = [{k: r[k] for k in ("id", "gold", "pred", "system")} for r in rows if r["system"] == "kg_oracle"]
    html = render_report(compute_metrics(bare), bare, cards)
    assert "<b>C1</b> gold NO (C), near_miss:" in html and "Why C</b>: sh:maxCount 1" in html
    assert "(None)" not in html and "Why None" not in html
    alone = render_report(compute_metrics(bare), bare)  # no cards file: the label from the gold
    assert "<b>C1</b> gold NO (C):" in alone


def test_the_glossary_is_the_table_of_rates():
    """Every rate of metrics.RATES, and no other, has its glossary line, formula as computed."""
    from audit.epistemic.rates import RATES

    rows, cards = rows_and_cards()
    html = render_report(compute_metrics(rows), rows, cards)
    glossary = html[html.index("<h2>Glossary</h2>"):]
    lines = re.findall(r'<tr><th class="l">([^<]+)</th><td class="l">([^<]+)</td></tr>', glossary)
    assert [name.split(" (")[0] for name, _ in lines] == [r.name for r in RATES]
    for (_, text), rate in zip(lines, RATES):
        assert text.replace(" ", "").startswith(rate.formula), rate.name


LEGACY = Path(__file__).resolve().parents[1] / "runs" / "legacy" / "epistemic_ok"


def test_a_legacy_run_rebuilds_its_report_through_the_typed_records(tmp_path):
    """A run written before audit.runs (tests/runs/legacy/epistemic_ok: no conditions, no U kinds)
    is read as Metrics, Answer and Card records; its page shows every card, and a damaged
    metrics.json is one line naming the field."""
    run = tmp_path / "run"
    shutil.copytree(LEGACY, run)
    page = rebuild(run).read_text(encoding="utf-8")
    for card in (json.loads(line) for line in (run / "cards.jsonl").read_text().splitlines()):
        assert f"<b>{card['id']}</b> gold {card['gold']} ({card['label']}), {card['suite']}:" in page
        assert f"<code>{card['claim']['obj']}</code>" in page
    assert "<h2>Per condition</h2>" not in page  # one condition, as the run had
    (run / "metrics.json").write_text(json.dumps({"kg_oracle": {"n_rows": "many"}}))
    with pytest.raises(UserError) as caught:
        rebuild(run)
    assert "metrics.json: kg_oracle.n_rows: " in str(caught.value) and "\n" not in str(caught.value)
