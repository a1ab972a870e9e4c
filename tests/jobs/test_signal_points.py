"""SIGINT or SIGTERM at a random moment of each experiment: the one line is the last thing printed, never a
traceback, and the run it leaves resumes to a finished run.

The moments are drawn from a seeded generator over the whole life of the process, from its first import to its
last write (the start-up, the first calls while litellm loads, a request body being written, the judge's fact
scoring, the epistemic answers), so a failure names its seed and delay and is replayed as it was. A few
deliveries per experiment (one of them in a fresh interpreter, whose imports are not done before the run
starts) keep the suite's time in bounds; ``bench/`` is where more deliveries are measured.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.testing.replies import chat_reply
from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter
from tests import entrypoints
from tests.signals import default_sigint

COMMON = ("gateway.max_retries=0", "gateway.cache.enabled=false", "output_dir=out")
EXPERIMENTS = {
    "censorship": (("audit", "max_iterations=4", "judge=default", "judge.model=test/judge",
                    f"auditor.model={AUDITOR_MODEL}", *COMMON), Script(stop_at_turn=4).handler),
    "epistemic": (("audit.epistemic", "system=raw_llm", "cards.num_per_type=4", "gateway.max_concurrency=4", *COMMON),
                  lambda request: chat_reply('{"answer": "YES"}')),
    "benchmark": (("audit.benchmark", "questions.limit=2", "rollouts=2", *COMMON), BenchmarkScript().handler),
}
DELIVERIES = 4
"""Signals per experiment (the first in a fresh interpreter)."""
SPAN_S = 6.0
"""Delays are drawn from 0 to this many seconds after the start: the runs above take about as long."""


def launch(cwd: Path, server: FakeOpenRouter, args: tuple[str, ...], cold: bool) -> entrypoints.Process:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
    # teardown: what it prints at the interpreter's end is read ("Exception ignored")
    return entrypoints.start([sys.executable, "-m", *args], cwd=cwd, env=env, text=True, preexec_fn=default_sigint,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cold=cold, teardown=True)


@pytest.mark.parametrize("experiment", sorted(EXPERIMENTS))
def test_a_signal_at_any_moment_leaves_one_last_line_and_a_run_that_resumes(tmp_path, experiment):
    args, handler = EXPERIMENTS[experiment]
    draw = random.Random(f"issue39-{experiment}")
    failures = []
    with FakeOpenRouter(latency_s=0.05, handler=handler) as server:
        for k in range(DELIVERIES):
            delay, sig = draw.uniform(0, SPAN_S), draw.choice([signal.SIGINT, signal.SIGTERM])
            cwd = tmp_path / str(k)
            cwd.mkdir()
            proc = launch(cwd, server, args, cold=k == 0)
            time.sleep(delay)
            if proc.poll() is None:
                proc.send_signal(sig)
            out, err = proc.communicate(timeout=120)
            where = f"{experiment} {sig.name} after {delay:.2f}s (delivery {k})"
            lines = err.strip().splitlines()
            # exit 1, or death by the very signal sent (a fresh interpreter, once, at 0.84 s: the line was
            # out first); either way the one line must be all of stderr
            if "Traceback" in err or "Exception ignored" in err or (proc.returncode != 0 and (
                    proc.returncode not in (1, -sig) or "interrupted" not in (lines or [""])[-1]
                    or len(lines) != 1)):
                failures.append(f"{where}: exit {proc.returncode}, stderr:\n{err}")
                continue
            for run_dir in [p.parent for p in cwd.glob("out/*/config.yaml")]:
                resumed = entrypoints.run([sys.executable, "-m", args[0], f"resume={run_dir}"], cwd=cwd,
                                          env={**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")},
                                               **server.env()}, capture_output=True, text=True, timeout=120)
                status = json.loads((run_dir / "summary.json").read_text())["status"]
                if not (resumed.returncode == 0 or "already finished" in resumed.stderr) or status != "success":
                    failures.append(f"{where}: resume exit {resumed.returncode}, status {status}: {resumed.stderr}")
    assert not failures, "\n\n".join(failures)
