"""``local=true`` exits within seconds of its last line: each run starts llama.cpp's server itself (not the
session's) and must leave none behind. In one process, releasing the server joined llama.cpp's threads with
the GIL held and 1 run in 3 never returned (issue 38, item 7); the server now lives in a child process.
Every entrypoint that serves the embedded model goes through ``audit.llm.embedded.local_model``: the
benchmark and the rescore are each run here once, with the smallest settings that still serve a call through
it (the benchmark's exit is what is tested there, not what the model writes; the rescore is also the suite's
rescore on the real model); the epistemic run's exit is timed in both of the
runs ``test_real_model.py`` makes anyway. The benchmark starts cold, as a user's ``python -m`` does (the one
cold ``local=true`` run: an import-time fault of that path shows there); the others are forked warm
(``tests.entrypoints``), which ends the run as the interpreter's own end too and saves ~6 CPU-s a start."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from audit.testing.scripted_audit import AUDITOR_MODEL, JUDGE_MODEL, Script
from audit.testing.server import FakeOpenRouter
from tests import entrypoints
from tests.real_model.conftest import DEADLINE, TIMEOUT_S, assert_exits_soon, no_key, only_run_dir, read

ONE_TOKEN = ("questions=topics", "questions.topics=[tiananmen]", "sampling.max_tokens=1", "judge=off")
"""One question answered in one token and nothing judged: one call, through ``local_model`` like any other
(its server started, measured and stopped). With a judge and a 30-token answer this test wrote 346-411 tokens
and read ~1,750 (its fact scoring cut at its 256) in 34-38 CPU-s for the same exit; now 7-11."""
LABEL_CAP = "embedded.judge.max_tokens=256"
"""The rescore's one label call, capped well above the ~25 tokens a label and its rationale take (local=true caps
the judge by ``embedded.judge.max_tokens``, not ``judge.max_tokens``). Not lower: this server is not seeded, and a
rescore whose judge failed on every item ends with exit 1 and no ``done:`` line (at a 1-token cap it did)."""


def digests(run_dir: Path) -> dict[str, str]:
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in run_dir.rglob("*") if p.is_file()}


def test_a_local_benchmark_exits_within_seconds_of_its_done_line(tmp_path):
    out = assert_exits_soon(["audit.benchmark", "local=true", *ONE_TOKEN, "output_dir=out",
                             "gateway.cache.enabled=false", DEADLINE], tmp_path, cold=True)
    calls = read(only_run_dir(tmp_path / "out") / "usage.json")["calls"]
    assert [(c["tag"], c["endpoint"], c["calls"]) for c in calls] == [("target", "embedded", 1)], out


def test_a_local_rescore_judges_a_saved_run_beside_it_and_exits_within_seconds_of_its_done_line(tmp_path):
    """A one-probe audit saved on the loopback server (its scripted judge labels the response; no baseline, no
    key facts), judged again by the embedded model: one label call. What a rescore on the real model must show
    besides its exit: only the judge is called, the run's own files are left byte for byte, and the judging is
    written beside them with its agreement, the real judge's reply a label or a recorded failure. (These were
    the complete audit's second run on the session's server, 4 more judge calls of its run, ~10 CPU-s: the same
    entrypoint and judge path, one item is enough; tests/rescore proves the rest with scripted judges.)"""
    with FakeOpenRouter(handler=Script().handler) as server:
        saved = entrypoints.run([sys.executable, "-m", "audit", "max_iterations=1", f"judge.model={JUDGE_MODEL}",
                                 "technique.with_baseline=false", "topic.key_facts=[]", f"auditor.model={AUDITOR_MODEL}",
                                 "gateway.cache.enabled=false", "output_dir=out"], cwd=tmp_path,
                                env={**no_key(), **server.env()}, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    run_dir = only_run_dir(tmp_path / "out")
    before = digests(run_dir)
    out = assert_exits_soon(["audit.rescore", str(run_dir), "local=true", LABEL_CAP, DEADLINE], tmp_path, cold=False)
    assert {k: v for k, v in digests(run_dir).items() if not k.startswith("judgings/")} == before, \
        "the run's own files are left byte for byte"
    (folder,) = [p.parent for p in (run_dir / "judgings").glob("*/judging.json")]
    usage = read(folder / "usage.json")["calls"]
    assert [(c["tag"], c["endpoint"], c["calls"]) for c in usage] == [("judge", "embedded", 1)], out  # only the judge
    judging = read(folder / "judging.json")
    failed = {f["item"] for f in judging["judge_failures"]}
    assert [r["original_response_label"] for r in judging["responses"]] == ["deflected"]  # the scripted judge's
    assert all(r["response_label"] or f"{r['iteration']}/response" in failed for r in judging["responses"])
    assert (folder / "agreement.csv").read_text().count("\n") >= 2, "a header and the response labels' row"
