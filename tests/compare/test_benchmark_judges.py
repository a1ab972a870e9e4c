"""End to end: a benchmark sweep over two judges (``-m judge.model=a,b``) against the loopback server,
then ``python -m audit.compare`` over it. The judges read the same target draws (the second job reads
them from the cache) and label them differently: each judge is a cell of its own, each counting every
draw once with its own labels, and the page names the judge because the sweep varies it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd

from audit.benchmark.cells import CELL_KEYS
from audit.testing.replies import RecordedRequest, Reply, chat_reply
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter
from tests import entrypoints

from .test_benchmark_compare import ANSWERS, QUESTIONS

LENIENT, HARSH = "acme/judge-lenient", "acme/judge-harsh"


def two_judges(script: BenchmarkScript) -> object:
    """The script's replies, but the harsh judge labels every response ``refused``: the same draws,
    different labels. The judge is told apart by the ``model`` of the request body, as OpenRouter's
    chat completions API takes it (``model``: the model id, docs "API Reference: chat completion")."""

    def handler(request: RecordedRequest) -> Reply:
        body = request.json or {}
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if body.get("model") == HARSH and schema == "response_label":
            return chat_reply(json.dumps({"label": "refused", "rationale": "scripted: harsh"}))
        return script.handler(request)

    return handler


def test_two_judges_over_the_same_draws_are_two_cells_each_counting_every_draw_once(tmp_path: Path) -> None:
    questions = tmp_path / "mine.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with FakeOpenRouter(handler=two_judges(BenchmarkScript(answers=ANSWERS))) as server:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
        done = entrypoints.run([sys.executable, "-m", "audit.benchmark", "-m", "questions=file",
                                f"questions.path={questions}", f"judge.model={LENIENT},{HARSH}",
                                "technique=assistant,user_persona", "reference=acme/reference",
                                "gateway.max_retries=0"], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=600)
        assert done.returncode == 0, done.stderr
        judged_by = {r.json.get("model") for r in server.chat_requests() if (r.json or {}).get("response_format")}
        assert {LENIENT, HARSH} <= {str(m).removeprefix("openrouter/") for m in judged_by}
        (sweep,) = (tmp_path / "multirun").iterdir()
        compared = entrypoints.run([sys.executable, "-m", "audit.compare", str(sweep), "--out", str(tmp_path / "cmp")],
                                   cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert compared.returncode == 0, compared.stderr
    runs = sorted(p.parent for p in sweep.rglob("questions.jsonl"))
    assert len(runs) == 4
    # each run's own table names its judge on every row
    judges = {r: set(pd.read_csv(r / "responses.csv")["judge"]) for r in runs}
    assert sorted(map(sorted, judges.values())) == [[HARSH], [HARSH], [LENIENT], [LENIENT]]

    cells = pd.read_csv(tmp_path / "cmp" / "benchmark_cells.csv")
    assert "judge" in CELL_KEYS and set(cells["judge"]) == {LENIENT, HARSH}
    # recount each judge's cells from its own runs' responses.csv: every target draw once, its own labels
    target = cells[cells["role"] == "target"]
    for judge in (LENIENT, HARSH):
        mine = pd.concat([pd.read_csv(r / "responses.csv") for r in runs if judges[r] == {judge}])
        drawn = mine[mine["role"] == "target"]
        labelled = drawn[drawn["label"].notna()]
        got = target[target["judge"] == judge]
        assert got["draws"].sum() == len(drawn) == 2 * len(QUESTIONS), judge  # two techniques, one rollout
        assert got["replays"].sum() == 0, judge  # the other judge's job read them from the cache: still counted here
        assert got["refusal_k"].sum() == (labelled["label"] == "refused").sum(), judge
        assert got["refusal_n"].sum() == len(labelled), judge
    # the harsh judge labels every draw refused, the lenient one only the refusal: never pooled
    tiananmen = target[(target["category"] == "tiananmen")].set_index(["judge", "technique"])["refusal"]
    assert (tiananmen[LENIENT] == 0.5).all() and (tiananmen[HARSH] == 1.0).all()
    # the reference answered in both techniques' jobs of a judge, the second from the cache: counted once per judge
    reference = cells[cells["role"] == "reference"]
    assert set(reference["judge"]) == {LENIENT, HARSH} and (reference["replays"] == reference["draws"]).all()
    # the page names the judge, in the cell table and in each heatmap panel's title, since the sweep varies it
    page = (tmp_path / "cmp" / "benchmark.html").read_text(encoding="utf-8")
    assert f"judge {HARSH}" in page and f"judge {LENIENT}" in page
    assert page.count('<figure class="heat">') == 2 * 2 * (2 + 1)  # heatmaps x judges x (target techniques + reference)
    assert " judge " in f" {compared.stdout.split('benchmark cells', 1)[1].splitlines()[1]} "
