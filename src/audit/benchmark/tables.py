"""``load_benchmark_tables(*dirs)``: the responses and facts tables of every benchmark run under ``dirs``
(run dirs, sweep dirs or any tree holding them), read from each run's ``questions.jsonl`` and
``draws.jsonl`` alone (the typed draws), never from its CSVs. The columns are the contract's
(:mod:`audit.benchmark.rows`); ``run`` is the run dir relative to the directory it was found under
(its own name when a run dir itself is given).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from audit.benchmark.draws import BenchmarkDraw, latest_draws
from audit.benchmark.questions import Question, QuestionSet, question_set_name
from audit.benchmark.rows import FACT_COLUMNS, RESPONSE_COLUMNS, frames, run_judge
from audit.io.journal import read_records
from audit.judging.counting import check_labels
from audit.io.safe_read import load_yaml
from audit.record.run_record import iter_runs
from audit.record.summary import BENCHMARK


def run_draws(path: Path) -> tuple[QuestionSet, list[BenchmarkDraw], str]:
    """One benchmark run dir's questions (named as its tables name the set), draws and judge."""
    questions = tuple(Question.from_record(r) for r in read_records(path / "questions.jsonl"))
    config = load_yaml(path / "config.yaml")
    return (QuestionSet(question_set_name(config.get("questions") or {}), questions),
            list(latest_draws(read_records(path / "draws.jsonl")).values()), run_judge(config))


def run_frames(path: Path, label: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables of one benchmark run dir (refused when a draw's label is outside the vocabulary:
    :func:`audit.judging.counting.check_labels`)."""
    responses, facts = frames(label, *run_draws(path))
    check_labels(responses["label"], path / "draws.jsonl")  # a label outside the vocabulary: nothing is counted
    return responses, facts


def load_benchmark_tables(*dirs: Path | str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(responses, facts) of every benchmark run under ``dirs``, each run once."""
    responses, facts = [], []
    seen: set[Path] = set()
    for root in map(Path, dirs):
        for record in iter_runs([root]):
            if record.experiment != BENCHMARK or record.stub or record.path in seen:
                continue
            seen.add(record.path)
            label = record.path.name if record.path == root.resolve() else \
                str(record.path.relative_to(root.resolve()))
            r, f = run_frames(record.path, label)
            responses.append(r)
            facts.append(f)
    if not responses:
        return pd.DataFrame(columns=list(RESPONSE_COLUMNS)), pd.DataFrame(columns=list(FACT_COLUMNS))
    return pd.concat(responses, ignore_index=True), pd.concat(facts, ignore_index=True)
