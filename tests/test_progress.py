"""The progress line: its wording, rate and ETA, and when it is printed (a fake clock, no timing)."""

from __future__ import annotations

import os
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
from audit.progress import EVERY_ENV, Heartbeat, Progress, format_duration, progress_line, silence_s, still_line


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (7.4, "7 s"), (59.6, "1 min 00 s"), (125, "2 min 05 s"),
                                           (3725, "1 h 02 min"), (-3, "0 s")])
def test_durations_read_in_whole_units(seconds, text):
    assert format_duration(seconds) == text


def test_line_shows_share_rate_of_calls_and_eta_from_the_answers_rate():
    # 3,000 of 6,000 answers in 10 s with 4,000 calls (some cards call twice): 400 calls/s,
    # and the other half takes as long again.
    assert progress_line(3000, 6000, 10.0, 4000) == "answered 3000/6000 (50%), 400.0 calls/s, ETA 10 s"


def test_last_line_says_how_long_it_took_and_first_moment_has_no_rate():
    assert progress_line(6000, 6000, 15.0, 6000) == "answered 6000/6000 (100%), 400.0 calls/s, took 15 s"
    assert progress_line(0, 6000, 0.0, 0) == "answered 0/6000 (0%)"
    assert progress_line(0, 0, 0.0, 0) == "answered 0/0 (100%)"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_prints_every_tenth_and_after_a_silence_counting_only_this_runs_calls():
    clock, lines, calls = Clock(), [], [50]  # 50 calls were in the ledger before (a resumed run)
    progress = Progress(100, lambda: calls[0], every_s=10.0, clock=clock, out=lines.append)
    for _ in range(9):
        clock.now += 0.1
        calls[0] += 1
        progress.tick()
    assert lines == []
    clock.now += 0.1
    calls[0] += 1
    progress.tick()
    assert lines == ["answered 10/100 (10%), 10.0 calls/s, ETA 9 s"]
    clock.now += 30  # a slow stretch: one answer after 30 s of silence still reports
    progress.tick()
    # 89 left at 10 answers in the 30.9 s since the first; 10 calls in 31 s (was "0 calls/s")
    assert lines[-1] == "answered 11/100 (11%), 0.3 calls/s, ETA 4 min 35 s"
    for _ in range(89):
        progress.tick()
    assert len(lines) == 11 and lines[-1].startswith("answered 100/100 (100%)")


def test_the_eta_counts_from_the_first_answer_so_concurrent_calls_do_not_inflate_it():
    """10 calls in flight at once: the first answer after 5 s, the next at 5.2 s. The rate since the
    start (1 answer per 5 s) would say 45 s for the other 9; since the first answer, 2 s."""
    assert progress_line(1, 10, 5.0, 1, first_s=5.0) == "answered 1/10 (10%), 0.2 calls/s"  # no ETA from one answer
    assert progress_line(2, 10, 5.2, 2, first_s=5.0) == "answered 2/10 (20%), 0.4 calls/s, ETA 2 s"


def test_a_silence_without_answers_prints_a_line_saying_so():
    clock, lines = Clock(), []
    progress = Progress(10, lambda: 0, every_s=10.0, clock=clock, out=lines.append)
    clock.now += 9
    progress.beat()
    assert lines == []
    clock.now += 3
    progress.beat()
    assert lines == ["answered 0/10 (0%), first answers in flight for 12 s"]
    progress.beat()  # just printed: quiet again until the next silence
    assert len(lines) == 1


def test_a_heartbeat_line_says_how_long_so_far_the_bound_left_and_the_retries():
    assert still_line("judge: scoring", 40, 110, retries=1) == "judge: scoring: 40 s so far, ≤ 1 min 10 s left, 1 retry"
    assert still_line("auditor: writing turn 1", 12) == "auditor: writing turn 1: 12 s so far"  # nothing timed yet: no bound
    assert still_line("x", 130, 120, retries=3) == "x: 2 min 10 s so far, past the 2 min 00 s the measured speed gave, 3 retries"


def test_a_heartbeat_reads_its_clock_and_the_retries_when_it_prints():
    clock, retries = Clock(), [0]
    with Heartbeat("export", budget_s=60, retries=lambda: retries[0], every_s=3600, clock=clock) as beat:
        clock.now += 20
        retries[0] = 2
        assert beat.line() == "export: 20 s so far, ≤ 40 s left, 2 retries"


def test_the_silence_allowed_is_10_s_unless_the_environment_lowers_it(monkeypatch):
    monkeypatch.delenv(EVERY_ENV, raising=False)
    assert silence_s() == 10.0
    assert Heartbeat("x")._every_s == 8.0 and Progress(1, lambda: 0)._every_s == 10.0
    monkeypatch.setenv(EVERY_ENV, "2")
    assert Heartbeat("x")._every_s == 1.6 and Progress(1, lambda: 0)._every_s == 2.0
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv(EVERY_ENV, bad)
        with pytest.raises(ValueError, match=f"{EVERY_ENV}=.*not a positive number of seconds"):
            silence_s()


# ---------------------------------------------------------------- end to end: no step silent

SILENCE_S = 2.0
"""The longest silence the end-to-end runs below are allowed (``$AUDIT_PROGRESS_EVERY_S``): a fifth of the
shipped 10 s, so that each reply need take seconds, not the 22 s a 10 s interval takes to prove (every call
of a run waits that long: the three runs took 217 s with 22 s replies, 115 s with these, side by side at load
12-17). The heartbeat then beats every 1.6 s."""
LATENCY_S = 9.0
"""Every reply of the loopback server waits this long: well past the silence allowed, so a step without a
heartbeat leaves a gap of at least this much."""
GAP_BOUND_S = 7.0
"""Under LATENCY_S, so a silent step fails; generous over the 1.6 s heartbeat (a behaviour test, not a
benchmark), leaving 5 s for a loaded machine to schedule the heartbeat's thread and the work between steps."""


def timed_lines(module: str, args: list[str], server: FakeOpenRouter, cwd: Path) -> tuple[int, list[tuple[float, str]]]:
    """Run ``python -m <module> <args>`` against ``server``; its exit code and each stdout line with
    the moment it arrived (from the start), the start itself and the exit as two more."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env(),
           EVERY_ENV: str(SILENCE_S)}
    started = time.monotonic()
    proc = entrypoints.start([sys.executable, "-m", module, *args], cwd=cwd, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = [(0.0, "(start)")]
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic() - started, line.rstrip("\n")))
    code = proc.wait(timeout=600)
    return code, [*lines, (time.monotonic() - started, "(exit)")]


def longest_silence(lines: list[tuple[float, str]]) -> tuple[float, str]:
    """The longest gap between two printed lines, and the line that ended it. The interpreter's start
    (imports, the tests' fork server) and its exit are left out: no line can be printed before the
    program runs, and their time is the machine's load, not a step of the run."""
    printed = lines[1:-1]
    return max((b[0] - a[0], b[1]) for a, b in zip(printed, printed[1:]))


@pytest.mark.parametrize("module, args, answer", [
    ("audit", ["max_iterations=1", "judge=off", "technique.with_baseline=false", f"auditor.model={AUDITOR_MODEL}",
               "gateway.cache.enabled=false", "output_dir=out"], None),
    ("audit.benchmark", ["questions.limit=1", "gateway.cache.enabled=false", "output_dir=out"], None),
    ("audit.epistemic", ["system=raw_llm", "system.model=acme/tiny", "cards.num_per_type=1",
                         "gateway.cache.enabled=false", "output_dir=out"], '{"answer": "UNKNOWN"}'),
])
def test_every_experiment_prints_a_line_within_each_silence_allowed_against_a_slow_server(tmp_path, module, args, answer):
    """Each reply takes 9 s: the auditor's turns, the target's draws, the judge and the answers all wait
    on it, and the run, allowed 2 s of silence, still prints a line within every 7 s (a heartbeat every
    1.6 s). The shipped 10 s is the same code with the default interval (tested above with a clock)."""
    handler = BenchmarkScript().handler if module == "audit.benchmark" else Script(stop_at_turn=2).handler
    with FakeOpenRouter(handler=None if answer else handler, latency_s=LATENCY_S) as server:
        if answer:
            server.default_reply = chat_reply(answer)
        code, lines = timed_lines(module, [*args, "gateway.max_retries=0"], server, tmp_path)
    assert code == 0, lines
    gap, after = longest_silence(lines)
    assert gap < GAP_BOUND_S, f"{gap:.0f} s without a line before {after!r}: {lines}"
    assert any(" so far" in text or "first answers in flight" in text for _, text in lines), lines  # the beat spoke
