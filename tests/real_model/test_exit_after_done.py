"""``local=true`` exits within seconds of its ``done:`` line: the run starts llama.cpp's server itself (not the
session's) and must leave none behind. In one process, releasing the server joined llama.cpp's threads with
the GIL held and 1 run in 3 never returned (issue 38, item 7); the server now lives in a child process."""

from __future__ import annotations

import os
import sys

from tests.exits import EXIT_S, run_to_exit
from tests.real_model.conftest import DEADLINE, TIMEOUT_S

SMALL = ("questions=topics", "questions.topics=[tiananmen]", "sampling.max_tokens=30", "judge.max_tokens=256")
"""One question, a short answer and one short judgment: about a minute on 2 busy cores."""


def test_a_local_run_exits_within_seconds_of_its_done_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    ended = run_to_exit([sys.executable, "-m", "audit.benchmark", "local=true", *SMALL, "output_dir=out",
                         "gateway.cache.enabled=false", DEADLINE], cwd=tmp_path, env=env, timeout_s=TIMEOUT_S)
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert ended.after_done_s is not None and ended.after_done_s <= EXIT_S, ended.stdout
