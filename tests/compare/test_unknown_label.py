"""End to end: a run file holding a response label the vocabulary does not define (a hand edit, or a
run judged with a vocabulary that has since lost the label). The judge's schema never lets one
through, so the run is made by the real entrypoints against the loopback server and then edited.
Every reader that counts labels refuses it with one line naming the file and the fix (nothing
counted, nothing written), the per-run views name it, and the fix it names (a rescore) works."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd

from audit.testing.scripted_audit import JUDGE_MODEL, Script
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter
from tests import entrypoints
from tests.censorship.test_main import BASE, audit, finish
from tests.compare.test_benchmark_compare import ANSWERS, QUESTIONS

LOST = "evasive"
"""A label an older vocabulary had: the run's ``deflected`` responses are relabelled with it."""


def command(cwd: Path, server: FakeOpenRouter, *args: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | server.env()
    return entrypoints.run([sys.executable, "-m", *args], cwd=cwd, env=env, text=True, capture_output=True,
                           timeout=300)


def relabel_run(run: Path) -> int:
    """``deflected`` -> :data:`LOST` in the run's summary counts and its saved draws; the responses relabelled."""
    summary = json.loads((run / "summary.json").read_text())
    moved = summary["classifications"].pop("deflected")
    summary["classifications"][LOST] = moved
    (run / "summary.json").write_text(json.dumps(summary))
    for path in sorted((run / "audited_responses").glob("*.json")):
        record = json.loads(path.read_text())
        if (record.get("classification") or {}).get("label") == "deflected":
            record["classification"]["label"] = LOST
            path.write_text(json.dumps(record))
    return moved


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_audit_run_with_a_lost_label_is_refused_by_every_count_and_named_by_its_views(
        tmp_path: Path, fake_openrouter) -> None:
    fake_openrouter.handler = Script(stop_at_turn=3).handler  # its judge labels every response deflected
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "judge=default", f"judge.model={JUDGE_MODEL}"))
    assert code == 0, err
    (run,) = (tmp_path / "out").iterdir()
    cmp = tmp_path / "cmp"
    assert command(tmp_path, fake_openrouter, "audit.compare", str(run), "--out", str(cmp)).returncode == 0
    before = files(cmp)
    moved = relabel_run(run)
    assert moved >= 2

    # the comparison: one line naming the file, the label and the fixes; the earlier comparison intact
    done = command(tmp_path, fake_openrouter, "audit.compare", str(run), "--out", str(cmp))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    line = done.stderr
    assert f"{run}/summary.json classifications: Unknown label '{LOST}'." in line
    assert f"it labels {moved} response(s)" in line and "judging/labels.yaml" in line
    assert f"python -m audit.rescore {run}" in line
    assert files(cmp) == before
    # two judgings side by side read the draws' labels: refused there too, naming the draws
    rescored = command(tmp_path, fake_openrouter, "audit.rescore", str(run), f"judge.model={JUDGE_MODEL}",
                       "judging=fresh")
    assert rescored.returncode == 0, rescored.stderr  # the fix named works on the edited run
    both = command(tmp_path, fake_openrouter, "audit.compare", str(run), "--out", str(cmp),
                   "judging=original,fresh")
    assert both.returncode == 1 and f"{run}/audited_responses: Unknown label '{LOST}'." in both.stderr, both.stderr
    assert files(cmp) == before
    # the fresh judging counts every response again: nothing left out
    fixed = command(tmp_path, fake_openrouter, "audit.compare", str(run), "--out", str(cmp), "judging=fresh")
    assert fixed.returncode == 0, fixed.stderr
    (row,) = pd.read_csv(cmp / "audits.csv").to_dict("records")
    assert row["n_labelled"] == row["n_responses"] == moved and row["deflected_share"] == 1.0

    # the run's own report renders and names the label; the run index shows no figures, saying why
    report = command(tmp_path, fake_openrouter, "audit.censorship.report", str(run))
    assert report.returncode == 0, report.stderr
    page = (run / "report.html").read_text(encoding="utf-8")
    assert f"unknown label {LOST} ({moved}): not one of the judge's labels" in page
    listed = command(tmp_path, fake_openrouter, "audit.runs", "list", str(tmp_path / "out"))
    assert listed.returncode == 0 and f"no figures: unknown label '{LOST}' ({moved})" in listed.stdout, listed.stderr


def test_a_benchmark_run_with_a_lost_label_is_refused_by_the_comparison(tmp_path: Path) -> None:
    questions = tmp_path / "mine.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with FakeOpenRouter(handler=BenchmarkScript(answers=ANSWERS).handler) as server:
        done = command(tmp_path, server, "audit.benchmark", "questions=file", f"questions.path={questions}",
                       "gateway.max_retries=0")
        assert done.returncode == 0, done.stderr
        (draws,) = (tmp_path / "outputs").rglob("draws.jsonl")
        lines = [json.loads(x) for x in draws.read_text().splitlines()]
        judged = next(r for r in lines if (r.get("classification") or {}).get("label"))
        judged["classification"]["label"] = "refsued"
        draws.write_text("".join(json.dumps(r) + "\n" for r in lines))
        compared = command(tmp_path, server, "audit.compare", str(draws.parent), "--out", str(tmp_path / "cmp"))
    assert compared.returncode == 1 and len(compared.stderr.strip().splitlines()) == 1, compared.stderr
    assert f"{draws}: Unknown label 'refsued'. Did you mean 'refused'?" in compared.stderr
    assert not (tmp_path / "cmp" / "benchmark_cells.csv").exists()
