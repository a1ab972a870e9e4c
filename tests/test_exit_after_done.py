"""A finished run exits within seconds of its ``done:`` line and leaves nothing pending on stderr: an audit and
a benchmark on the loopback server, in fresh interpreters (the real entrypoints, nothing patched), with every
stream whole, and with streams cut off by their deadline and retried. The embedded model's runs are
tests/real_model/test_exit_after_done.py."""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import replace
from typing import Any

import pytest

from audit.testing.replies import Reply
from audit.testing.scripted_audit import Script
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter
from tests.exits import EXIT_S, left_pending, run_to_exit
from tests.timing import scaled

COMMON = ("gateway.cache.enabled=false", "output_dir=out")
RUNS = {
    "audit": (("audit", "max_iterations=2", *COMMON), Script),
    "benchmark": (("audit.benchmark", "questions.limit=2", *COMMON), BenchmarkScript),
}
DEADLINE_S = scaled(3)
"""A streamed attempt's deadline when streams are cut: the scripted replies take milliseconds, the cut ones'
events come :data:`DEADLINE_S` apart, so each cut attempt's deadline falls between its first two events."""
CUT_STREAMS = ("gateway.stream.min_tokens=0", f"gateway.stream.timeout_s={DEADLINE_S:g}",
               "gateway.backoff_initial_s=0.01", "gateway.backoff_max_s=0.02")
"""Every chat call streamed (OpenRouter's SSE), cut off at :data:`DEADLINE_S`, retried at once."""


class FirstAttemptsCut:
    """The scripted server, whose first ``n`` distinct streamed requests are sent too slowly for their deadline
    (the gateway's retry of each gets the scripted reply at once): cut-off streams inside a run that succeeds."""

    def __init__(self, handler: Any, n: int = 2):
        self.handler, self.n = handler, n
        self.cut: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: Any) -> Reply | None:
        reply = self.handler(request)
        body = request.json or {}
        key = json.dumps(body, sort_keys=True)
        with self._lock:
            if body.get("stream") and reply is not None and len(self.cut) < self.n and key not in self.cut:
                self.cut.append(key)
                return replace(reply, stream_interval_s=DEADLINE_S)
        return reply


@pytest.mark.parametrize("streams", ["whole", "cut"])
@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_finished_run_exits_within_seconds_of_its_done_line_leaving_nothing_pending(tmp_path, run, streams):
    """Python's development mode (``-X dev``: asyncio's debug checks, ResourceWarnings shown) prints no task,
    coroutine or generator left pending: a cut stream's generators are closed where its reading stopped."""
    args, script = RUNS[run]
    handler = FirstAttemptsCut(script().handler) if streams == "cut" else script().handler
    with FakeOpenRouter(handler=handler) as server:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
        ended = run_to_exit([sys.executable, "-X", "dev", "-m", *args, *(CUT_STREAMS if streams == "cut" else ())],
                            cwd=tmp_path, env=env, timeout_s=scaled(300))
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert ended.after_done_s is not None and ended.after_done_s <= EXIT_S, ended.stdout
    assert not left_pending(ended.stderr), ended.stderr
    if streams == "cut":  # the deadline cut that many streams (each in the ledger as an estimate), and the run finished
        (usage,) = (tmp_path / "out").rglob("usage.json")
        calls = json.loads(usage.read_text(encoding="utf-8"))["calls"]
        assert len(handler.cut) == handler.n == sum(bool(c.get("estimated")) for c in calls)
