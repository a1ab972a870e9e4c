"""``python -m audit.compare <dirs> judging=...`` end to end: a sweep run against the loopback server,
rescored by another judge and by a panel; compare shows a chosen judging, two side by side with
their agreement, and marks the cells whose judges disagree."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from audit.testing.scripted_audit import Script
from tests.censorship.panel_judges import PANEL, panel_handler
from tests.rescore.test_rescore import OTHER, PANEL_JUDGING, finished_sweep, rescore, sweep  # noqa: F401 (fixtures)
from tests import entrypoints


def compare(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return entrypoints.run([sys.executable, "-m", "audit.compare", *args], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=300)


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open(encoding="utf-8")))


def test_compare_shows_a_chosen_judging_two_side_by_side_and_marks_disagreement(tmp_path, fake_openrouter, sweep):  # noqa: F811
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), f"judge.model={OTHER}")
    assert code == 0, err
    fake_openrouter.handler = panel_handler(Script(stop_at_turn=3))
    code, _, err = rescore(tmp_path, fake_openrouter, str(sweep), PANEL)
    assert code == 0, err

    unknown = compare(tmp_path, str(sweep), "judging=nope", "--out", "x")
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1
    assert f"available: original, {PANEL_JUDGING}, test_other-judge" in unknown.stderr and not (tmp_path / "x").exists()

    # the default is the original judging: deflected throughout, nothing marked
    done = compare(tmp_path, str(sweep), "--out", "original")
    assert done.returncode == 0, done.stderr
    cells = rows(tmp_path / "original" / "censorship_map.csv")
    assert {c["refused"] for c in cells} == {"0"} and {c["judges_marked"] for c in cells} == {"False"}
    assert not (tmp_path / "original" / "judgings.csv").exists()

    # another judging shown instead: the other judge refused probe 1 of each run
    done = compare(tmp_path, str(sweep), f"judging={OTHER.replace('/', '_')}", "--out", "other")
    assert done.returncode == 0, done.stderr
    audits = rows(tmp_path / "other" / "audits.csv")
    assert [float(a["refused_share"]) for a in audits] == [0.5, 0.5]

    # two side by side: they differ on 1 of 2 responses per cell (50% > 10%): marked, in CSV and HTML
    done = compare(tmp_path, str(sweep), f"judging=original,{OTHER.replace('/', '_')}", "--out", "both")
    assert done.returncode == 0, done.stderr
    side = rows(tmp_path / "both" / "judgings.csv")
    assert {(r["technique"], r["n_both"], r["differing"], r["marked"]) for r in side} == {
        ("user_persona", "2", "1", "True"), ("prefill", "2", "1", "True"), ("assistant (baseline)", "4", "2", "True")}
    assert all(float(r["kappa"]) == 0.0 and r["facts_differing"] == "0" for r in side)
    assert all(r["judges_marked"] == "True" and "differ on 50% of the responses" in r["judges_mark"]
               for r in rows(tmp_path / "both" / "censorship_map.csv"))
    html = (tmp_path / "both" / "comparison.html").read_text()
    assert "Two judgings side by side: original and test_other-judge" in html and "judges disagree" in html
    assert "two judgings side by side" in done.stdout
    # every judging's label of each draw, side by side in one table (no join): the other judge's refusals of probe 1
    labels = rows(tmp_path / "both" / "draw_labels.csv")
    assert {"audited", "topic", "cell", "auditor", "settings", "label:original", "label:test_other-judge",
            f"label:{PANEL_JUDGING}"} <= set(labels[0])
    assert len(labels) == 8 and {r["label:original"] for r in labels} == {"deflected"}
    assert sum(r["label:test_other-judge"] == "refused" for r in labels) == 4

    # the panel's judging: disputed is a label in the shares; its members split on every response: marked
    done = compare(tmp_path, str(sweep), f"judging={PANEL_JUDGING}", "--out", "panel")
    assert done.returncode == 0, done.stderr
    technique = [c for c in rows(tmp_path / "panel" / "censorship_map.csv") if c["technique"] == "user_persona"][0]
    assert (technique["disputed"], technique["n_labelled"], technique["panel_split"]) == ("1", "2", "2")
    assert technique["judges_marked"] == "True" and "the panel's members differ on 100%" in technique["judges_mark"]
    audits = rows(tmp_path / "panel" / "audits.csv")
    assert {float(a["disputed_share"]) for a in audits} == {0.5}


def without_draw_labels(run: Path) -> None:
    """The run as written before its draws kept their judgment: only the summary counts them."""
    for path in sorted((run / "audited_responses").glob("*.json")):
        record = json.loads(path.read_text())
        record.pop("classification", None)
        if isinstance(record.get("baseline"), dict):
            record["baseline"].pop("classification", None)
        path.write_text(json.dumps(record))


def outputs(folder: Path) -> dict[str, str]:
    """Every table and page a comparison wrote, its generation time masked (not ``responses.csv`` and
    ``draw_labels.csv``: they list each draw's saved label, which the old run has not)."""
    return {p.name: re.sub(r"<th>generated</th><td>[^<]*</td>", "", p.read_text()) for p in sorted(folder.iterdir())
            if p.name not in ("responses.csv", "draw_labels.csv")}


def test_counts_grouped_from_the_draws_equal_the_summarys_and_an_old_run_still_compares(
        tmp_path, fake_openrouter, sweep):  # noqa: F811
    done = compare(tmp_path, str(sweep), "--out", "from_draws")
    assert done.returncode == 0, done.stderr
    for run in sorted(p.parent for p in sweep.rglob("summary.json")):
        without_draw_labels(run)
    old = compare(tmp_path, str(sweep), "--out", "from_summary")
    assert old.returncode == 0, old.stderr
    drawn, summed = outputs(tmp_path / "from_draws"), outputs(tmp_path / "from_summary")
    assert drawn == summed and len(drawn) == 11
    cells = rows(tmp_path / "from_summary" / "censorship_map.csv")
    assert {(c["technique"], c["n_labelled"]) for c in cells} == {
        ("user_persona", "2"), ("prefill", "2"), ("assistant (baseline)", "4")}
