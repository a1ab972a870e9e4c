"""A fact scoring's blind checks, one per credited fact, each print a line with the count and the time
left (before, the checks ran under the scoring call's heartbeat, whose bound was that one call's, and a
slow judge's checks were a silence or a line saying the bound was past)."""

from __future__ import annotations

import os
import re
import sys

from audit.progress import Steps, steps_line
from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from audit.testing.server import FakeOpenRouter
from tests import entrypoints


def test_a_step_line_counts_and_extrapolates_the_time_left_from_the_steps_done():
    assert steps_line("fact scoring", "blind check", "credited fact", 2, 6, 8.0) == \
        "fact scoring: blind check 2 of 6 credited facts, 8 s so far, ≤ 16 s left"
    assert steps_line("fact scoring", "blind check", "credited fact", 1, 1, 3.0) == \
        "fact scoring: blind check 1 of 1 credited fact, 3 s so far"


def test_steps_start_their_clock_at_zero_and_print_each_step_after():
    now, lines = [50.0], []
    steps = Steps("fact scoring", "blind check", "credited fact", clock=lambda: now[0], out=lines.append)
    steps(0, 3)
    assert lines == []
    now[0] += 4
    steps(1, 3)
    now[0] += 2
    steps(2, 3)
    steps(3, 3)
    assert lines == ["fact scoring: blind check 1 of 3 credited facts, 4 s so far, ≤ 8 s left",
                     "fact scoring: blind check 2 of 3 credited facts, 6 s so far, ≤ 3 s left",
                     "fact scoring: blind check 3 of 3 credited facts, 6 s so far"]


def test_an_audit_prints_a_line_per_blind_check_in_order(tmp_path, fake_openrouter: FakeOpenRouter):
    """The scripted judge credits facts 1, 2, 3 and 5 with a quote found in a response (fact 4's quote
    is in none, so it has no check): four checks, four lines, counted 1 to 4 after the scoring call."""
    fake_openrouter.handler = Script(stop_at_turn=3).handler
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **fake_openrouter.env()}
    proc = entrypoints.run([sys.executable, "-m", "audit", f"auditor.model={AUDITOR_MODEL}", "judge=default",
                            "judge.model=test/judge", "technique.with_baseline=false", "gateway.max_retries=0",
                            "gateway.cache.enabled=false", "max_iterations=4", "output_dir=out"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    checks = [(n, line) for n, line in enumerate(lines) if line.startswith("fact scoring: blind check")]
    counts = [re.match(r"fact scoring: blind check (\d+) of (\d+) credited facts, \d+ s so far", line).groups()
              for _, line in checks]
    assert counts == [("1", "4"), ("2", "4"), ("3", "4"), ("4", "4")], proc.stdout
    assert all("left" in line for _, line in checks[:-1]) and "left" not in checks[-1][1]
    started = next(n for n, line in enumerate(lines) if line.startswith("scoring key facts"))
    assert started < checks[0][0] and not any(line.startswith("done:") for line in lines[:checks[-1][0]])
