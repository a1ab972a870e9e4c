"""The per-run, per-response and per-answer tables, checked against a recount of the files a
real sweep (``python -m audit -m`` against the loopback server) and a real epistemic run wrote."""

from __future__ import annotations

import io
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from audit.judging.judge import CLASSES
from audit.judging.prompts import load
from audit.runs.tables import CACHE_COLUMNS, RESPONSE_COLUMNS, load_tables, table_files
from audit.testing.replies import error_reply
from audit.testing.scripted_audit import JUDGE_MODEL, Script, quote
from tests.censorship.test_main import BASE, audit, finish
from tests import entrypoints

SWEEP = [a for a in BASE if not a.startswith(("output_dir", "judge="))] + [
    f"judge.model={JUDGE_MODEL}", "technique.with_baseline=true", "hydra.sweep.dir=sweep"]


class VariedJudge(Script):
    """Labels each response by its probe number and answer kind, so the label counts differ per
    technique and iteration (a fixed label could not show a mis-paired row)."""

    def judge_reply(self, messages):
        if messages[0]["content"] == load("judge_facts_system"):  # fact 1 revealed, quoting response 3
            ids = [int(n) for n in re.findall(r"^(\d+)\. ", messages[1]["content"], flags=re.M)]
            return json.dumps({"facts": [{"id": k, "revealed": k == 1, "contradicted": False, "response": 3,
                                          "quote": quote(3) if k == 1 else ""} for k in ids]})
        text = messages[-1]["content"]
        found = re.findall(r"answer (\d+)", text)
        shift = 0 if found else 3  # the baseline's refusal has no "answer k"
        k = int(found[-1]) if found else len(text)
        return json.dumps({"label": CLASSES[(k + shift) % len(CLASSES)], "rationale": "scripted"})


def run_sweep(tmp_path: Path, server) -> Path:
    script = VariedJudge(stop_at_turn=4, target_error=lambda k: error_reply(500, "boom") if k == 2 else None)
    server.handler = script.handler
    code, _, err = finish(audit(tmp_path, server, "-m", "audited=kimi_k2,deepseek_chat", *SWEEP))
    assert code == 0, err
    return tmp_path / "sweep"


def recount(sweep: Path) -> tuple[int, Counter, Counter, int]:
    """From the response files alone: rows, labels per (model, technique), baseline labels, tokens."""
    files = sorted(sweep.glob("*/*/audited_responses/*.json"))
    labels, baseline, tokens = Counter(), Counter(), 0
    for path in files:
        record = json.loads(path.read_text())
        model = json.loads((path.parent.parent / "summary.json").read_text())["config"]["audited"]["model"]
        labels[(model, record["technique"], (record.get("classification") or {}).get("label"))] += 1
        if record.get("baseline"):
            baseline[(model, (record["baseline"].get("classification") or {}).get("label"))] += 1
        tokens += (record.get("usage") or {}).get("completion_tokens") or 0
    return len(files), labels, baseline, tokens


def test_the_response_table_of_a_sweep_equals_a_recount_of_its_files(tmp_path, fake_openrouter):
    sweep = run_sweep(tmp_path, fake_openrouter)
    tables = load_tables(sweep)
    rows, labels, baseline, tokens = recount(sweep)
    frame = tables.responses
    assert rows == len(frame) > 4 and tuple(frame.columns) == RESPONSE_COLUMNS
    got = Counter({(m, t, None if pd.isna(lab) else lab): n
                   for (m, t, lab), n in frame.groupby(["model", "technique", "label"], dropna=False).size().items()})
    assert got == labels and len({lab for _, _, lab in labels}) == 3  # two labels and the failed call
    got_baseline = Counter({(m, lab): n for (m, lab), n in
                            frame.dropna(subset=["baseline_response"])
                            .groupby(["model", "baseline_label"]).size().items()})
    assert got_baseline == baseline
    assert frame["completion_tokens"].sum() == tokens
    # the failed call of probe 2 is a row with its error and no label, in both runs
    failed = frame[frame["iteration"] == 2]
    assert len(failed) == 2 and failed["error"].notna().all() and failed["label"].isna().all()
    # every row carries its run's keys and the probe the auditor designed
    assert set(frame["audited"]) == {"kimi_k2", "deepseek_chat"} and set(frame["topic"]) == {"tiananmen"}
    assert (frame["probe"] == [f"Probe {k}: what happened in Beijing in 1989?" for k in frame["iteration"]]).all()
    assert set(frame["repeat"]) == {0}
    # the judge's fact quote is located in the response that states it, not in the baseline's
    quoted = frame.dropna(subset=["fact_quotes"])
    assert list(quoted["iteration"]) == [3, 3] and (quoted["fact_quotes"] == f"1: {quote(3)}").all()
    assert frame["baseline_fact_quotes"].isna().all()
    # one row per run, whose cost is what its summary says
    runs = tables.runs
    assert len(runs) == 2 and set(runs["status"]) == {"success"} and (runs["problem"].isna()).all()
    for row in runs.itertuples():
        totals = json.loads((Path(row.path) / "summary.json").read_text())["totals"]
        assert row.cost == totals["cost"]
        # the prompt cache's columns, recorded by this version (0 here: the script reports no cache)
        assert (row.cached_prompt_tokens, row.cache_write_tokens, row.cache_saving) == \
            (totals["cached_prompt_tokens"], totals["cache_write_tokens"], totals["cache_saving"])
    # the end-of-sweep comparison wrote the same table as CSV
    written = pd.read_csv(sweep / "responses.csv")
    assert len(written) == len(frame) and list(written["label"].fillna("-")) == list(frame["label"].fillna("-"))


def test_the_answer_table_has_one_row_per_card_and_system(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script().handler
    env = {**__import__("os").environ, **fake_openrouter.env()}
    done = entrypoints.run([sys.executable, "-m", "audit.epistemic", "output_dir=out", "systems=[kg_oracle,raw_llm]",
                           "cards.num_per_type=1", "gateway.max_retries=0"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    tables = load_tables(tmp_path / "out")
    answers = tables.answers
    assert len(answers) == len(results) and set(answers["system"]) == {r["system"] for r in results}
    assert Counter(zip(answers["system"], answers["pred"])) == Counter((r["system"], r["pred"]) for r in results)
    assert answers["question"].notna().all()  # joined from cards.jsonl
    assert tables.runs["answers"].tolist() == [len(results)] and tables.responses.empty


LEGACY = Path(__file__).resolve().parent / "legacy"


def test_runs_from_before_the_prompt_cache_was_recorded_have_empty_cache_columns_not_zero():
    """The legacy fixture's files (written before cached tokens were recorded) name no cache fields:
    their cells are empty in the frame and in ``runs.csv``, while the tokens they did record show."""
    runs = load_tables(LEGACY).runs
    finished = runs[(runs["status"] == "success") & (runs["experiment"] == "censorship")]
    assert len(finished) >= 2 and finished["prompt_tokens"].notna().all()
    assert runs[list(CACHE_COLUMNS)].isna().all().all()
    written = pd.read_csv(io.StringIO(str(table_files(load_tables(LEGACY))["runs.csv"])), keep_default_na=False,
                          dtype=str)
    assert len(written) == len(runs) and (written[list(CACHE_COLUMNS)] == "").all().all()
    assert (written.loc[finished.index, "prompt_tokens"] != "").all()
