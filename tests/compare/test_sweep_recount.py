"""End to end: a sweep run as a user runs it (``python -m audit -m ...`` in a subprocess, against
the loopback server, judge on, assistant baseline sampled) whose comparison cells equal a recount
from the run files, including responses the judge failed to label."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from audit.judging.judge import classification_system
from audit.testing.replies import Reply, chat_reply
from audit.testing.scripted_audit import JUDGE_MODEL, Script, target_text
from tests.censorship.panel_judges import JUDGE_A, JUDGE_B, JUDGE_C, PANEL, panel_handler
from tests.censorship.test_main import BASE, audit, finish
from tests.compare.test_judgings import compare, outputs, without_draw_labels

CLASSES = ("refused", "deflected", "official_line", "partial", "forthcoming")
BASELINE = "assistant (baseline)"


def judge_fails_on_some(script: Script) -> Any:
    """The script, except that the judge labels odd probes refused and even ones forthcoming, and
    returns an unparsable reply (a failed judgment: the response stays unlabelled) for the
    target's second response and for the baseline's answer to probe 1."""
    classify = classification_system()

    def handler(request: Any) -> Reply | None:
        body = request.json
        messages = body.get("messages") or []
        if body.get("model") == JUDGE_MODEL and messages and messages[0]["content"] == classify:
            user = messages[-1]["content"]
            if target_text(2).strip() in user or ("Probe 1:" in user and script.baseline_text in user):
                return chat_reply("I would rather not judge this.")
            label = "refused" if any(f"Probe {k}:" in user for k in (1, 3, 5)) else "forthcoming"
            return chat_reply(json.dumps({"label": label, "rationale": "scripted"}))
        return script.handler(request)
    return handler


def recount(sweep_dir: Path) -> dict[tuple[str, str, str], dict[str, int]]:
    """Per (audited, topic, technique), counted from the files each run wrote: the labels in
    audited_responses/ (technique and baseline), and each key fact once from summary.json
    (contradicted wins over revealed; a fact credited from the auditor's summary alone is not
    revealed)."""
    cells: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for responses in sorted(sweep_dir.rglob("audited_responses")):
        run = responses.parent
        summary = json.loads((run / "summary.json").read_text())
        config = summary["config"]
        key = (config["audited"]["name"], config["topic"]["name"], summary["technique"])
        for path in sorted(responses.glob("*.json")):
            record = json.loads(path.read_text())
            for cell, sample in ((key, record), ((*key[:2], BASELINE), record.get("baseline"))):
                if sample is None:
                    continue
                label = (sample.get("classification") or {}).get("label")
                cells[cell]["n_responses"] += 1
                cells[cell][label if label in CLASSES else "unlabelled"] += 1
        for cell, recall in ((key, summary["fact_recall"]), ((*key[:2], BASELINE), summary["baseline_fact_recall"])):
            if recall and recall.get("covered") is not None:
                for fact in recall["facts"]:
                    contradicted = fact.get("status") == "contradicted" or fact.get("contradicted") is True
                    revealed = fact.get("status") == "revealed" and fact.get("where") != "knowledge"
                    cells[cell]["facts_total"] += 1
                    cells[cell]["facts_contradicted"] += contradicted
                    cells[cell]["facts_revealed"] += revealed and not contradicted
    return {k: dict(v) for k, v in cells.items()}


def test_sweep_comparison_equals_a_recount_from_the_run_files(tmp_path: Path, fake_openrouter) -> None:
    script = Script(stop_at_turn=4)
    fake_openrouter.handler = judge_fails_on_some(script)
    sweep = [a for a in BASE if not a.startswith(("output_dir", "technique.with_baseline"))]  # baseline on here
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat",
                                  "technique=user_persona,prefill", "technique.with_baseline=true",
                                  *sweep, "judge=default", f"judge.model={JUDGE_MODEL}"))
    assert code == 0, err
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    expected = recount(sweep_dir)
    assert len(expected) == 2 * 3  # two models x (user_persona, prefill, the assistant baseline)
    cmap = pd.read_csv(sweep_dir / "censorship_map.csv")
    assert len(cmap) == len(expected)
    for row in cmap.to_dict("records"):
        counts = expected[(row["audited"], row["topic"], row["technique"])]
        labelled = counts["n_responses"] - counts.get("unlabelled", 0)
        assert (row["n_responses"], row["unlabelled"], row["n_labelled"]) == \
            (counts["n_responses"], counts.get("unlabelled", 0), labelled)
        assert row["unlabelled"] >= 1  # every run had a judge failure: it is counted, not hidden
        assert row["refused"] == counts.get("refused", 0)
        assert row["refused_share"] == pytest.approx(counts.get("refused", 0) / labelled)
        assert row["refused_share_lo"] < row["refused_share_hi"]  # never zero width with responses
        assert (row["facts_revealed"], row["facts_contradicted"], row["facts_total"]) == \
            (counts["facts_revealed"], counts["facts_contradicted"], counts["facts_total"])
        assert row["fact_recall"] == pytest.approx(counts["facts_revealed"] / counts["facts_total"])
        # One run per technique cell: the fallback over responses, labelled; the baseline cell holds
        # the baselines of both techniques' runs: an interval over runs.
        assert row["interval_unit"] == ("runs" if row["runs"] > 1 else "responses")
        assert row["runs"] == (2 if row["technique"] == BASELINE else 1)
    audits = pd.read_csv(sweep_dir / "audits.csv")
    assert (audits["unlabelled"] == 1).all() and (audits["baseline_unlabelled"] == 1).all()
    assert audits["flags"].str.contains("1 response\\(s\\) unlabelled by the judge").all()
    html = (sweep_dir / "comparison.html").read_text(encoding="utf-8")
    assert "unlabelled by the judge" in html and "facts revealed by assistant baseline" in html


MIXED = {JUDGE_A: {1: "deflected", 3: "deflected", 4: "deflected"}, JUDGE_B: {1: "refused", 4: None},
         JUDGE_C: {1: "partial", 3: None}}
"""Three judges (tests/censorship/panel_judges.py) unanimous on probe 2 and any later one (each says
``deflected``), split on 1 (three labels), 3 (C's call fails) and 4 (B's reply is garbage)."""


def panel_recount(sweep_dir: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (audited, cell): the draws a panel labelled and those whose saved votes were not all
    back and equal, counted from each draw's votes in audited_responses/ (no code under test)."""
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for responses in sorted(sweep_dir.rglob("audited_responses")):
        summary = json.loads((responses.parent / "summary.json").read_text())
        audited = summary["config"]["audited"]["name"]
        for path in sorted(responses.glob("*.json")):
            record = json.loads(path.read_text())
            for cell, sample in ((summary["technique"], record), (BASELINE, record.get("baseline"))):
                judged = (sample or {}).get("classification") or {}
                if judged.get("outcome") is None:
                    continue
                votes = [v for member in judged["members"].values() for v in member]
                cells[(audited, cell)][0] += 1
                cells[(audited, cell)][1] += None in votes or len(set(votes)) > 1
    return {k: (v[0], v[1]) for k, v in cells.items()}


def summary_panel(sweep_dir: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (audited, cell): the same figures as each run's summary records them (``judge_panel.cells``),
    summed over the runs: what the comparison read before the draw rows carried the panel."""
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for summary_path in sorted(sweep_dir.rglob("summary.json")):
        summary = json.loads(summary_path.read_text())
        for cell, entry in summary["judge_panel"]["cells"].items():
            key = (summary["config"]["audited"]["name"], cell)
            cells[key][0] += entry["items"]
            cells[key][1] += entry["items"] - entry["unanimous"]
    return {k: (v[0], v[1]) for k, v in cells.items()}


def test_a_panels_split_per_cell_is_grouped_from_the_draws_votes_and_an_old_run_still_compares(
        tmp_path: Path, fake_openrouter) -> None:
    fake_openrouter.handler = panel_handler(Script(stop_at_turn=4), MIXED)
    sweep = [a for a in BASE if not a.startswith(("output_dir", "technique.with_baseline", "judge="))]
    code, _, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat",
                                "technique=user_persona,prefill", "technique.with_baseline=true", *sweep,
                                "judge=default", PANEL))
    assert code == 0, err
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    expected = panel_recount(sweep_dir)
    assert expected == summary_panel(sweep_dir)  # the draws' votes and the summaries agree
    assert all(0 < split < items for items, split in expected.values())  # unanimous and split draws in every cell
    done = compare(tmp_path, str(sweep_dir), "--out", "from_draws")
    assert done.returncode == 0, done.stderr
    cells = pd.read_csv(tmp_path / "from_draws" / "censorship_map.csv")
    assert {(r["audited"], r["technique"]): (r["panel_items"], r["panel_split"]) for r in cells.to_dict("records")} \
        == expected
    # the draw rows carry it: each panel draw's agreement and every member's own label
    labels = pd.read_csv(tmp_path / "from_draws" / "draw_labels.csv", keep_default_na=False)
    assert {f"label:original:{m}" for m in (JUDGE_A, JUDGE_B, JUDGE_C)} <= set(labels.columns)
    grouped = labels.groupby(["audited", "cell"])["panel:original"]
    assert {k: (len(v), int((v == "split").sum())) for k, v in grouped} == expected
    # and each run's row: one run per (model, technique), its baseline's figures summed over the model's runs
    audits = pd.read_csv(tmp_path / "from_draws" / "audits.csv")
    assert {(r["audited"], r["technique"]): (r["panel_items"], r["panel_split"]) for r in audits.to_dict("records")} \
        == {k: v for k, v in expected.items() if k[1] != BASELINE}
    baselines = audits.groupby("audited")[["baseline_panel_items", "baseline_panel_split"]].sum()
    assert {(a, BASELINE): tuple(int(x) for x in r) for a, r in baselines.iterrows()} == \
        {k: v for k, v in expected.items() if k[1] == BASELINE}
    # an old run dir (its draws without their judgment): counted from the summaries, to the same bytes
    for run in sorted(p.parent for p in sweep_dir.rglob("summary.json")):
        without_draw_labels(run)
    old = compare(tmp_path, str(sweep_dir), "--out", "from_summary")
    assert old.returncode == 0, old.stderr
    assert outputs(tmp_path / "from_draws") == outputs(tmp_path / "from_summary")
