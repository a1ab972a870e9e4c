"""``python -m audit.judge_check`` with key-fact verdict columns (``fact_<n>``) and with a judge panel,
end to end against the loopback server; the expected figures are computed by hand."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from audit.judging.prompts import load
from audit.testing.replies import chat_reply, prompt_text
from audit.testing.scripted_audit import scripted_entailment
from tests.judge_check.test_judge_check import check

# id -> (your label, your fact_1, your fact_2) and the response text (with what the judge may quote)
ROWS = {"r1": ("refused", "revealed", "not_revealed"), "r2": ("refused", "revealed", "contradicted"),
        "r3": ("deflected", "not_revealed", "not_revealed"), "r4": ("deflected", "not_revealed", "")}
TEXT = {"r1": "It began after Hu Yaobang died.", "r2": "Nobody was ever hurt there.",
        "r3": "Students occupied the square, I think.", "r4": "Let us talk about the economy."}
# What the scripted judge claims per response: fact 1 (verdict, quote) and fact 2.
FACTS = {"r1": (("revealed", "after Hu Yaobang died"), ("not_revealed", "")),
         "r2": (("revealed", "not in the response at all"), ("contradicted", "Nobody was ever hurt")),
         "r3": (("revealed", "Students occupied the square"), ("not_revealed", "")),
         "r4": (("not_revealed", ""), ("not_revealed", ""))}
JUDGE_A, JUDGE_B = "test/judge-a", "test/judge-b"


def write(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "topic", "response", "label", "fact_1", "fact_2"])
        for ident, (label, f1, f2) in ROWS.items():
            writer.writerow([ident, "tiananmen", f"[{ident}] {TEXT[ident]}", label, f1, f2])
    return path


def handler(request):
    body = request.json
    ident = re.search(r"\[(r\d)\]", prompt_text(request)).group(1)
    if body["messages"][0]["content"] == load("judge_entail_system"):  # the credit check: keeps the claim
        fact = re.match(r"FACT: (.*)\n", body["messages"][1]["content"]).group(1)
        return chat_reply(json.dumps({"verdict": scripted_entailment(fact), "rationale": "scripted"}))
    if body["messages"][0]["content"] == load("judge_facts_system"):
        n = len(re.findall(r"^(\d+)\. ", body["messages"][1]["content"], flags=re.M))
        said = dict(enumerate(FACTS[ident], 1))
        return chat_reply(json.dumps({"facts": [
            {"id": k, "revealed": said.get(k, ("",))[0] == "revealed", "contradicted": said.get(k, ("",))[0] ==
             "contradicted", "response": 1 if k in said and said[k][1] else 0,
             "quote": said[k][1] if k in said else ""} for k in range(1, n + 1)]}))
    label = ROWS[ident][0]
    if body["model"] == JUDGE_B and ident == "r1":
        label = "deflected"
    return chat_reply(json.dumps({"label": label, "rationale": "scripted"}))


def test_fact_verdict_columns_are_scored_per_verdict(tmp_path, fake_openrouter):
    fake_openrouter.handler = handler
    result = check(tmp_path, fake_openrouter, str(write(tmp_path / "labels.csv")))
    assert result.returncode == 0, result.stderr
    (out,) = (tmp_path / "out").iterdir()
    report = json.loads((out / "judge_check.json").read_text())
    facts = report["facts"]
    # 7 labelled verdicts; the judge agrees on 5 (r2 fact 1: its quote is not in the response, so
    # not revealed; r3 fact 1: revealed where you said not)
    assert (facts["responses"], facts["judged"], facts["failed"]) == (7, 7, 0)
    per = facts["per_label"]
    assert (per["revealed"]["precision"]["k"], per["revealed"]["precision"]["n"]) == (1, 2)
    assert (per["revealed"]["recall"]["k"], per["revealed"]["recall"]["n"]) == (1, 2)
    assert (per["not_revealed"]["precision"]["k"], per["not_revealed"]["precision"]["n"]) == (3, 4)
    assert (per["not_revealed"]["recall"]["k"], per["not_revealed"]["recall"]["n"]) == (3, 4)
    assert per["contradicted"]["precision"]["value"] == 1.0 and per["contradicted"]["recall"]["value"] == 1.0
    # po 5/7, pe (2*2 + 4*4 + 1*1)/49 = 3/7: kappa (5/7 - 3/7) / (4/7) = 1/2, over 4 responses (the unit)
    assert facts["kappa"]["value"] == pytest.approx(0.5) and facts["kappa"]["n"] == 7
    assert facts["kappa"]["unit"] == "runs" and facts["kappa"]["runs"] == 4  # each response a cluster
    assert (out / "judge_check_facts.csv").is_file() and (out / "judge_check_fact_items.csv").is_file()
    rows = list(csv.DictReader((out / "judge_check_facts.csv").open()))
    assert [r["label"] for r in rows] == ["revealed", "confirmed", "not_revealed", "contradicted"]
    assert "key-fact verdicts" in result.stdout and "Key-fact verdicts" in (out / "judge_check.html").read_text()
    assert report["members"] == {}


def test_a_panel_is_checked_with_each_member_against_your_labels(tmp_path, fake_openrouter):
    fake_openrouter.handler = handler
    result = check(tmp_path, fake_openrouter, str(write(tmp_path / "labels.csv")),
                   f"judge.models=[{JUDGE_A},{JUDGE_B}]")
    assert result.returncode == 0, result.stderr
    (out,) = (tmp_path / "out").iterdir()
    report = json.loads((out / "judge_check.json").read_text())
    assert [m["name"] for m in report["judge"]["members"]] == [JUDGE_A, JUDGE_B]
    # r1: A refused, B deflected -> disputed (judged, but no class: refused recall 1/2)
    assert report["judged"] == 4 and report["per_label"]["refused"]["recall"]["k"] == 1
    assert "disputed" in report["confusion"]["categories"]
    assert report["members"][JUDGE_A]["value"] == pytest.approx(1.0)
    # B vs you: po 3/4, pe (2*1 + 2*3)/16 = 1/2 -> kappa 1/2
    assert report["members"][JUDGE_B]["value"] == pytest.approx(0.5)
    assert f"member {JUDGE_B}: kappa vs your labels 0.50" in result.stdout
    models = [r.json["model"] for r in fake_openrouter.requests]
    # a label and a fact scoring per row each, and a credit check per fact claimed with a found quote
    # (r1 fact 1, r2 fact 2, r3 fact 1; r2's fact 1 quote is in no response)
    assert models.count(JUDGE_A) == models.count(JUDGE_B) == 4 + 4 + 3
    assert report["facts"]["kappa"]["value"] == pytest.approx(0.5)  # both members score facts alike
