"""A finished run exits within seconds of its ``done:`` line: an audit and a benchmark on the loopback
server, in fresh interpreters (the real entrypoints, nothing patched). The embedded model's run is
tests/real_model/test_exit_after_done.py."""

from __future__ import annotations

import os
import sys

import pytest

from audit.testing.scripted_audit import Script
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter
from tests.exits import EXIT_S, run_to_exit
from tests.timing import scaled

COMMON = ("gateway.cache.enabled=false", "output_dir=out")
RUNS = {
    "audit": (("audit", "max_iterations=2", *COMMON), Script().handler),
    "benchmark": (("audit.benchmark", "questions.limit=2", *COMMON), BenchmarkScript().handler),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_finished_run_exits_within_seconds_of_its_done_line(tmp_path, run):
    args, handler = RUNS[run]
    with FakeOpenRouter(handler=handler) as server:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
        ended = run_to_exit([sys.executable, "-m", *args], cwd=tmp_path, env=env, timeout_s=scaled(300))
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert ended.after_done_s is not None and ended.after_done_s <= EXIT_S, ended.stdout
