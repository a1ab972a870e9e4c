"""The one CSV writer: a model's or server's text in a cell is never a live formula and carries no
control character, in every CSV the tool writes; numbers and ordinary text read back as written.

Before (issue 39): a benchmark run's own ``responses.csv`` and ``facts.csv`` were written raw (13 and 18
live formula cells, 5 and 7 cells with control bytes, for the hostile texts below); the comparison's
were escaped by a function of its own. Now every writer goes through :func:`audit.io.table.csv_text`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from audit.benchmark.draws import BenchmarkDraw
from audit.benchmark.questions import Fact, Question, QuestionSet
from audit.benchmark.rows import RESPONSE_COLUMNS, category_rows, write_tables
from audit.io.table import csv_cell, csv_text
from audit.judge_check.labels import Labelled
from audit.judge_check.metrics import validate
from audit.judge_check.report import write_outputs
from audit.neutral import visible
from audit.rescore.rescore import write_agreement
from audit.runs.tables import RunTables, table_files
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter
from tests import entrypoints

HYPERLINK = '=HYPERLINK("http://x")'
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m"
HOSTILE = [HYPERLINK, f"{HYPERLINK} {ESCAPES}", "+1+cmd", "-2+3", "@SUM(A1)", "\t=1", "\r=1", " =1", "\n=1",
           "\u200b=1", "\ufeff\u200d@x", "\u200b" * 100 + "=1", "＝1+1", "\u00a0-1+1", f"{ESCAPES}=1", "\u202e=1"]
"""A cell a spreadsheet would evaluate: each formula start, after white space, invisible characters or as a
fullwidth look-alike, and terminal escapes (which alone would have the terminal obey them on ``cat``)."""


def live(cell: str) -> bool:
    """Whether a spreadsheet (or a terminal showing the file) would act on ``cell``."""
    start = visible(cell).lstrip(" \n")
    formula = start.startswith(("=", "+", "-", "@", "\t", "\r"))
    try:
        float(cell)
        return False
    except ValueError:
        return formula or any(c in cell for c in "\x1b\x07\x9b\u202e")


def cells(path: Path) -> list[str]:
    """The cells as a spreadsheet splits them: a bare carriage return ends a row, as it does there."""
    with path.open(encoding="utf-8", newline=None) as handle:
        return [cell for row in csv.reader(handle) for cell in row]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_cell_a_spreadsheet_or_terminal_would_act_on_is_inert(text):
    cell = csv_cell(text)
    assert not live(cell) and "\x1b" not in cell, repr(cell)
    assert cell.startswith(("'", "[U+")), repr(cell)  # shown as text from its first character


@pytest.mark.parametrize("text, kept", [("Tank Man", "Tank Man"), (-0.5, -0.5), (None, None), ("-0.25", "-0.25"),
                                        ("+3", "+3"), ("1e-5", "1e-5"), ("a\nb\tc\r\n", "a\nb\tc\r\n"),
                                        ("天安门，一九八九", "天安门，一九八九"), (True, True)])
def test_ordinary_cells_and_numbers_are_kept(text, kept):
    assert csv_cell(text) == kept


def test_controls_are_shown_not_obeyed():
    assert csv_cell("a\x1b[2Jb\x07\x9b") == "a[U+001B][2Jb[U+0007][U+009B]"
    assert csv_cell("a\r=1") == "a\n=1" and csv_cell("a\r\nb") == "a\r\nb"  # a bare CR would start a row
    assert csv_cell("I refuse\u202e.x") == "I refuse[U+202E].x"


def test_a_table_reads_back_as_written_where_it_is_data():
    frame = pd.DataFrame({"fact": [HYPERLINK, "ok", "-1"], "share": [-0.25, 0.5, None], "n": [1, 2, 3],
                          "flag": [True, False, True]})
    back = pd.read_csv(io.StringIO(csv_text(frame)))
    assert back["share"].tolist()[:2] == [-0.25, 0.5] and back["n"].tolist() == [1, 2, 3]
    assert back["flag"].tolist() == [True, False, True] and back["fact"].tolist() == ["'" + HYPERLINK, "ok", "-1"]


# -- every writer -------------------------------------------------------------------------------------

def _benchmark_run(tmp_path: Path) -> list[Path]:
    questions, draws = [], []
    for k, text in enumerate(HOSTILE):
        q = Question(f"q{k}", text, text, "censored", "en", (Fact(f"f{k}", text),))
        questions.append(q)
        draws.append(BenchmarkDraw.model_validate({
            "iteration": 0, "technique": "assistant", "item_key": f"target/{q.id}/0", "question_id": q.id,
            "rollout": 0, "model": text, "raw_response": text, "outcome": "answer", "classification": {"label": "refused"},
            "assessment": {"label": "honest", "eval_aware": False}, "model_extra": {"served": {"provider": text}},
            "facts_judgment": {"facts": [{"status": "revealed", "claimed": "revealed", "quote": text}]}}))
    return [p for p in write_tables(tmp_path, QuestionSet(HYPERLINK, tuple(questions)), draws, ESCAPES)
            if p.suffix == ".csv"]


def _run_tables(tmp_path: Path) -> list[Path]:
    frame = pd.DataFrame({"run": HOSTILE, "response": HOSTILE, "share": [-0.5] * len(HOSTILE)})
    written = []
    for name, content in table_files(RunTables(runs=frame, responses=frame, answers=frame)).items():
        if name.endswith(".csv"):
            (tmp_path / name).write_text(content, encoding="utf-8", newline="")
            written.append(tmp_path / name)
    return written


def _judge_check(tmp_path: Path) -> list[Path]:
    rows = [Labelled(id=text, topic=text, probe=text, response=text, label="refused", run=text) for text in HOSTILE]
    results = [{"label": None, "error": text} if k % 2 else {"label": "refused"} for k, text in enumerate(HOSTILE)]
    cats = ("refused", "forthcoming")
    metrics = validate([r.label for r in rows], [r["label"] for r in results], [None] * len(rows), cats, resamples=50)
    facts = validate(["revealed"] * 2, ["revealed", None], ["a", "b"], ("revealed", "not_revealed"), resamples=50)
    items = [{"id": text, "run": text, "fact_no": 1, "human": "revealed", "judge": "revealed", "error": text}
             for text in HOSTILE]
    write_outputs(tmp_path, tmp_path / "labels.csv", {"model": HYPERLINK}, rows, results, metrics, facts, items)
    return sorted(tmp_path.glob("*.csv"))


def _rescore(tmp_path: Path) -> list[Path]:
    from omegaconf import OmegaConf
    labelled = [(text, {"response labels": (["refused", "forthcoming"], ["refused", "refused"])}) for text in HOSTILE]
    write_agreement(tmp_path, HYPERLINK + ESCAPES, labelled, OmegaConf.create({"resamples": 50, "seed": 0}))
    return sorted(tmp_path.glob("*.csv"))


WRITERS: dict[str, Callable[[Path], list[Path]]] = {
    "benchmark run (responses.csv, facts.csv)": _benchmark_run,
    "run tables (runs.csv, responses.csv, answers.csv; compare, benchmark_*.csv)": _run_tables,
    "judge_check": _judge_check,
    "rescore": _rescore,
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_no_writer_leaves_a_live_cell_on_disk(writer, tmp_path):
    written = WRITERS[writer](tmp_path)
    assert written
    for path in written:
        raw = path.read_text(encoding="utf-8")
        assert "\x1b" not in raw and "\x07" not in raw, path.name
        found = cells(path)
        assert not [c for c in found if live(c)], (path.name, [c for c in found if live(c)])
    assert any(c.startswith("'" + HYPERLINK) for p in written for c in cells(p))  # there, shown as text


def test_a_benchmark_runs_own_tables_are_inert_and_read_back(tmp_path):
    """End to end: the target answers ``=HYPERLINK(...)`` with terminal escapes; the run's own CSVs and the
    comparison's hold it as text, the Parquet twin as written, and the recount from the CSVs equals the
    run's summary (the data columns read back as they were)."""
    reply = f"{HYPERLINK} {ESCAPES}"
    script = BenchmarkScript(answers={"": reply})
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    with FakeOpenRouter(handler=script.handler) as server:
        env = {**base, **server.env()}
        done = entrypoints.run([sys.executable, "-m", "audit.benchmark", "questions.limit=2", "rollouts=1",
                                "gateway.max_retries=0", "output_dir=out"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        (run_dir,) = {p.parent for p in (tmp_path / "out").rglob("responses.csv")}
        compared = entrypoints.run([sys.executable, "-m", "audit.compare", str(tmp_path / "out"), "--out",
                                    str(tmp_path / "cmp")], cwd=tmp_path, env=env, capture_output=True, text=True,
                                   timeout=300)
        assert compared.returncode == 0, compared.stderr
    written = [*run_dir.glob("*.csv"), *(tmp_path / "cmp").glob("*.csv")]
    assert {"responses.csv", "facts.csv", "benchmark_cells.csv"} <= {p.name for p in written}
    for path in written:
        assert "\x1b" not in path.read_text(encoding="utf-8") and not [c for c in cells(path) if live(c)], path
    responses = pd.read_csv(run_dir / "responses.csv")
    assert set(responses["response"]) == {csv_cell(reply)} and csv_cell(reply).startswith("'=HYPERLINK")
    if (run_dir / "responses.parquet").exists():
        assert set(pd.read_parquet(run_dir / "responses.parquet")["response"]) == {reply}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert tuple(responses.columns) == RESPONSE_COLUMNS and len(responses) == summary["draws"] > 0
    assert pd.DataFrame(category_rows(responses, pd.read_csv(run_dir / "facts.csv")))["judged"].tolist() == \
        [c["judged"] for c in summary["categories"]]
