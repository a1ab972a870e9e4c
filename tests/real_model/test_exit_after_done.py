"""``local=true`` exits within seconds of its last line: each run starts llama.cpp's server itself (not the
session's) and must leave none behind. In one process, releasing the server joined llama.cpp's threads with
the GIL held and 1 run in 3 never returned (issue 38, item 7); the server now lives in a child process.
Every entrypoint that serves the embedded model goes through ``audit.llm.embedded.local_model``: the
benchmark (target and judge), the epistemic run (its LLM systems) and the rescore (its judge) are each run
once, with the smallest settings that still make a call."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from audit.testing.server import FakeOpenRouter
from tests import entrypoints
from tests.exits import EXIT_S, run_to_exit
from tests.real_model.conftest import DEADLINE, TIMEOUT_S, only_run_dir

SMALL = ("questions=topics", "questions.topics=[tiananmen]", "sampling.max_tokens=30", "embedded.judge.max_tokens=256")
"""One question, a short answer and one short judgment (local=true caps the judge by `embedded.judge.max_tokens`,
not `judge.max_tokens`): about a minute on 2 busy cores."""


def no_key() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}


def assert_exits_soon(args: list[str], cwd: Path, last: str = "^done:") -> str:
    """Run ``python -m <args>`` to its exit; it succeeds and exits within :data:`EXIT_S` of its last line."""
    ended = run_to_exit([sys.executable, "-m", *args], cwd=cwd, env=no_key(), timeout_s=TIMEOUT_S, last=last)
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert "embedded model: smollm2" in ended.stdout  # the run started its own server
    assert ended.after_done_s is not None and ended.after_done_s <= EXIT_S, ended.stdout
    return ended.stdout


def test_a_local_benchmark_exits_within_seconds_of_its_done_line(tmp_path):
    assert_exits_soon(["audit.benchmark", "local=true", *SMALL, "output_dir=out", "gateway.cache.enabled=false",
                       DEADLINE], tmp_path)


def test_a_local_epistemic_run_exits_within_seconds_of_its_done_line(tmp_path):
    """One LLM system on one card of each label (3 calls)."""
    assert_exits_soon(["audit.epistemic", "local=true", "systems=[raw_llm]", "cards.num_per_type=1",
                       "cards.suites=[standard]", "output_dir=out", "gateway.cache.enabled=false", DEADLINE], tmp_path)


def test_a_local_rescore_exits_within_seconds_of_its_done_line(tmp_path):
    """A one-probe audit saved on the loopback server (no baseline, no key facts), judged again by the
    embedded model: one label call."""
    with FakeOpenRouter(handler=Script().handler) as server:
        saved = entrypoints.run([sys.executable, "-m", "audit", "max_iterations=1", "judge=off",
                                 "technique.with_baseline=false", "topic.key_facts=[]", f"auditor.model={AUDITOR_MODEL}",
                                 "gateway.cache.enabled=false", "output_dir=out"], cwd=tmp_path,
                                env={**no_key(), **server.env()}, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    run_dir = only_run_dir(tmp_path / "out")
    out = assert_exits_soon(["audit.rescore", str(run_dir), "local=true", "embedded.judge.max_tokens=256", DEADLINE],
                            tmp_path)
    assert (run_dir / "judgings").is_dir(), out
