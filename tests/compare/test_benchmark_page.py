"""The comparison page of benchmark runs (audit.compare.benchmark) over synthetic tables in the loader's
columns: its files, its heatmaps against the cells they show, and model text kept as text."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from audit.benchmark.cells import benchmark_tables
from audit.compare.benchmark import OUTPUTS, PANEL_KEYS, benchmark_output, column_name, context, page_files
from audit.compare.report import fmt, interval
from audit.counted import counted
from audit.io.atomic import write_texts
from tests.benchmark.synthetic import tables

PAYLOAD = '<script>window.__pwned = 1</script>'


@pytest.fixture(scope="module")
def bench():
    responses, facts = tables()
    for frame in (responses, facts):
        frame.loc[frame["model"] == "m/b", "model"] = f"m/b {PAYLOAD}"
    return benchmark_tables(responses, facts)


def test_the_page_and_every_table_are_written_as_one_set(tmp_path: Path, bench) -> None:
    files = page_files(bench, [tmp_path / "sweep"], tmp_path, 3)
    assert {p.name for p in files} >= set(OUTPUTS)
    write_texts(files)
    cells = pd.read_csv(tmp_path / "benchmark_cells.csv")
    assert len(cells) == len(bench.cells)
    assert cells["refusal"].round(9).equals(bench.cells["refusal"].round(9))
    assert (cells["refusal_method"].fillna("") == bench.cells["refusal_method"]).all()


def test_each_heatmap_cell_shows_its_cell(bench) -> None:
    """One panel per role · technique · framing · lang · question set, never pooled, its columns each one
    kind and category (control marked); each cell the cell's rate, its interval and its counts."""
    page = context(bench, [Path("sweep")], 3)
    panels = {key: frame for key, frame in bench.cells.groupby(list(PANEL_KEYS))}
    by_title = {" · ".join(map(str, key)): frame for key, frame in panels.items()}
    for heat, metric in zip(page["heatmaps"], ("refusal", "fact_recall")):
        assert [p["title"] for p in heat["panels"]] == list(by_title)
        for panel in heat["panels"]:
            frame = by_title[panel["title"]]
            columns = {column_name(k, c): (k, c) for k, c in zip(frame["kind"], frame["category"])}
            assert sorted(panel["categories"]) == sorted(columns)
            for row in panel["rows"]:
                for header, cell in zip(panel["categories"], row["cells"]):
                    kind, category = columns[header]
                    record = frame[(frame["model"] == row["model"]) & (frame["kind"] == kind)
                                   & (frame["category"] == category)]
                    if cell is None:
                        assert record.empty
                        continue
                    r = record.iloc[0]
                    assert cell["value"] == fmt(r[metric]) and cell["ci"] == interval(r, metric)
                    assert cell["n"].startswith(f"{r[f'{metric}_k']}/{r[f'{metric}_n']} ")
                    assert cell["over"] == f"{counted(r[f'{metric}_questions'], 'question')}, {counted(r['draws'], 'draw')}"


def test_model_text_stays_text(tmp_path: Path, bench) -> None:
    html = page_files(bench, [tmp_path], tmp_path, 3)[tmp_path / "benchmark.html"]
    assert isinstance(html, str) and PAYLOAD not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert len(re.findall(r"<script>", html)) == 1  # the page's own script element only


def test_the_gap_tables_say_what_minus_what_and_over_how_many_questions(bench) -> None:
    page = context(bench, [Path("sweep")], 3)
    assert "refusal gap (censored − control)" in page["control_gaps"]["columns"]
    assert "refusal gap (technique − assistant)" in page["knows_vs_says"]["columns"]
    assert "refusal gap (framing − natural)" in page["framing_gaps"]["columns"]
    cis = [c["ci"] for row in page["knows_vs_says"]["rows"] for c in row if c["ci"]]
    assert cis and all(re.search(r"over \d+ questions$", unescape(ci)) for ci in cis)


def test_no_benchmark_run_no_benchmark_files(tmp_path: Path) -> None:
    nothing = benchmark_output([], [tmp_path], tmp_path)
    assert nothing.files == {} and nothing.printed == []


def test_knows_vs_says_is_charted_per_role_and_technique_with_each_gaps_interval_and_n(bench) -> None:
    """One chart per role · technique for the refusal share and one for fact recall; a bar per row of the
    knows-vs-says table, its text the gap, its paired interval and the questions it is over; the key names
    the question kinds the chart colours (censored, control), nothing else."""
    gaps = bench.knows_vs_says
    charts = context(bench, [Path("sweep")], 3)["knows_vs_says_charts"]
    groups = gaps.groupby(["role", "technique"]).size()
    assert len(charts) == 2 * len(groups) and len(groups) > 0
    for chart in charts:
        assert {k["name"] for k in chart["legend"]} <= {"censored", "control"}
    refusal = [row for chart in charts[::2] for row in chart["rows"]]
    assert len(refusal) == len(gaps)
    for row, record in zip(refusal, gaps.sort_values(["role", "technique", "model", "framing", "lang",
                                                      "question_set", "kind"]).to_dict("records")):
        if pd.isna(record["refusal_gap"]):
            assert row["na"]
            continue
        expected = f"{record['refusal_gap']:+.2f}"
        if not pd.isna(record["refusal_gap_lo"]):
            expected += f" [{record['refusal_gap_lo']:.2f}, {record['refusal_gap_hi']:.2f}]"
        assert row["text"] == expected + f" · {counted(int(record['refusal_gap_questions']), 'question')}"
